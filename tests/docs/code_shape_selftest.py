#!/usr/bin/env python3
"""tools/code_shape.py's parsers on small inputs whose answers are known (the test
code_shape_selftest): a checker that passed everything would pass the tree too."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from code_shape import (MAX_FUNCTION_LINES, cpp_shapes, python_functions,  # noqa: E402
                        shell_functions, violations)

SELF_TEST_CPP = r'''
namespace a {
// a comment { with a brace
struct Small {
  int x = 1, y{2};
  std::vector<std::pair<int, int>> v;
  std::function<void(int)> f;
  static constexpr int kMax = 3;
  using T = int;
  void g(int) const;
  Small(const Small&) = delete;
  struct Inner { int z; } inner;
  std::atomic<int> p{0}, q{0};
};
class Big : public Base {
 public:
  Big(int a) : a_(a), b_{a} {
    if (a) { a_ = 2; }
    auto l = [&](int x) { return x + 1; };
  }
  int f() const override { return "}"[0]; }
 private:
  int a_, b_;
};
int free_function(int x) {
  for (int i = 0; i < x; ++i) {
    x += i;
  }
  return x;
}
}  // namespace a
'''


def main():
    functions, classes = cpp_shapes(SELF_TEST_CPP)
    got_f = {(n, last - first + 1) for n, first, last in functions}
    want_f = {("Big", 4), ("f", 1), ("free_function", 6)}
    got_c = {(n, c) for n, c, _ in classes}
    want_c = {("Small", 7), ("Small::Inner", 1), ("Big", 2)}
    ok = True
    if got_f != want_f:
        print("C++ functions: got %s, want %s" % (sorted(got_f), sorted(want_f)))
        ok = False
    if got_c != want_c:
        print("C++ classes: got %s, want %s" % (sorted(got_c), sorted(want_c)))
        ok = False
    py = "def f():\n    x = 1\n    return x\n\nclass A:\n    def g(self):\n        pass\n"
    if {(n, b - a + 1) for n, a, b in python_functions(py)} != {("f", 3), ("g", 2)}:
        print("Python functions: %s" % python_functions(py))
        ok = False
    sh = "f() {\n  if x; then\n    y\n  fi\n}\n"
    if shell_functions(sh) != [("f", 1, 5)]:
        print("shell functions: %s" % shell_functions(sh))
        ok = False
    too_long = "void h() {\n" + "  x();\n" * MAX_FUNCTION_LINES + "}\n"
    fn, _ = cpp_shapes(too_long)
    if not violations([], [("x.cc", n, a, b - a + 1) for n, a, b in fn], []):
        print("a function of %d lines passed the check" % (MAX_FUNCTION_LINES + 2))
        ok = False
    print("self-test: %s" % ("passed" if ok else "FAILED"))
    return 0 if ok else 1




if __name__ == "__main__":
    sys.exit(main())
