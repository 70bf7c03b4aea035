"""How figures are written: accuracies, points, bytes, ratios, times, Markdown tables."""


def acc(x):
    return f"{x:.4f}"


def points(x):
    # Accuracy difference in percentage points, with its sign.
    return f"{100 * x:+.2f}"


def nbytes(x):
    return "-" if x is None else f"{x:,.0f}"


def ratio(x):
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 10 else f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def secs(x):
    return f"{x * 1e3:.2f} ms" if x < 1 else f"{x:.2f} s"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def env_text(env):
    return " ".join(f"{k}={v}" for k, v in env.items()) if env else "(none: the defaults)"


def verdict(met):
    return "met" if met else "**NOT met**"
