// gradwire_compare_checkpoints A B [--with-time]: compares two checkpoint files of gradwire_train
// section by section (Note [Checkpoint format]). The TIME section (clock readings,
// Note [Checkpoint figures]) differs between any two runs and is left out unless --with-time
// is given.
// Exits 0 when every compared section is byte-identical, 1 when one differs (naming it and the
// first differing byte), 2 when a file cannot be read or parsed.
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>

#include "cli/cli.h"
#include "reference_trainer/app/checkpoint.h"

namespace {

gw::trainer::Checkpoint read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  try {
    return gw::trainer::parse_checkpoint(bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string a_path, b_path;
  bool with_time = false;
  gw::cli::Parser app{"Compare two gradwire_train checkpoint files, section by section"};
  app.add("a", a_path).required();
  app.add("b", b_path).required();
  app.add_flag("--with-time", with_time, "Compare the TIME section (clock readings) too");
  if (const auto code = app.parse(argc, argv)) return *code;
  try {
    const auto a = gw::trainer::checkpoint_sections(read(a_path));
    const auto b = gw::trainer::checkpoint_sections(read(b_path));
    bool same = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::string& tag = a[i].first;
      if (tag == "TIME" && !with_time) continue;
      const std::string &x = a[i].second, &y = b[i].second;
      if (x == y) {
        std::printf("%s: identical (%zu bytes)\n", tag.c_str(), x.size());
        continue;
      }
      std::size_t at = 0;
      while (at < x.size() && at < y.size() && x[at] == y[at]) ++at;
      std::printf("%s: DIFFERS (%zu vs %zu bytes, first difference at byte %zu)\n", tag.c_str(),
                  x.size(), y.size(), at);
      same = false;
    }
    return same ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
