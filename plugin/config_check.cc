#include "plugin/config_check.h"

#include <cstdint>
#include <set>
#include <vector>

#include "plugin/config/config.h"

namespace gw {

void check_same_on_all_ranks(Communicator& comm, const std::string& canonical) {
  const auto n = static_cast<std::size_t>(comm.size());
  const std::vector<std::size_t> ones(n, 1);

  const auto hash = static_cast<std::int64_t>(config::fnv1a(canonical));
  std::vector<std::int64_t> hashes(n);
  comm.allgatherv(&hash, 1, hashes.data(), ones, DataType::kInt64, TrafficKind::kControl);
  bool same = true;
  for (const auto h : hashes) same = same && h == hashes[0];
  if (same) return;

  // Every rank saw the same hashes, so every rank takes this path: exchange the texts to name the
  // differing keys.
  const auto length = static_cast<std::int64_t>(canonical.size());
  std::vector<std::int64_t> lengths(n);
  comm.allgatherv(&length, 1, lengths.data(), ones, DataType::kInt64, TrafficKind::kControl);
  std::vector<std::size_t> counts(n);
  std::size_t total = 0;
  for (std::size_t r = 0; r < n; ++r) total += counts[r] = static_cast<std::size_t>(lengths[r]);
  std::string all(total, '\0');
  comm.allgatherv(canonical.data(), canonical.size(), all.data(), counts, DataType::kUInt8,
                  TrafficKind::kControl);

  std::vector<std::map<std::string, std::string>> per_rank;
  std::set<std::string> keys;
  std::size_t offset = 0;
  for (std::size_t r = 0; r < n; ++r) {
    per_rank.push_back(config::parse_canonical(all.substr(offset, counts[r])));
    offset += counts[r];
    for (const auto& kv : per_rank.back()) keys.insert(kv.first);
  }
  std::string message = "configuration differs across ranks (every rank must use the same):";
  for (const auto& key : keys) {
    bool differs = false;
    for (std::size_t r = 1; r < n; ++r) {
      differs = differs || per_rank[r].count(key) != per_rank[0].count(key) ||
                (per_rank[r].count(key) && per_rank[r].at(key) != per_rank[0].at(key));
    }
    if (!differs) continue;
    message += "\n  " + key + ":";
    for (std::size_t r = 0; r < n; ++r) {
      const auto it = per_rank[r].find(key);
      message += " rank " + std::to_string(r) + " '" +
                 (it == per_rank[r].end() ? std::string("<unset>") : it->second) + "'" +
                 (r + 1 < n ? "," : "");
    }
  }
  throw config::ConfigError(message, config::ConfigError::SameOnEveryRank{});
}

void agree_on_startup_errors(Communicator& comm, const std::function<void()>& step) {
  std::string error;
  try {
    step();
  } catch (const std::exception& e) {
    error = e.what();
    if (error.empty()) error = "unknown error";
  } catch (...) {
    error = "unknown exception";
  }
  const auto n = static_cast<std::size_t>(comm.size());
  const std::int64_t mine = error.empty() ? 0 : 1;
  std::vector<std::int64_t> failed(n);
  comm.allgatherv(&mine, 1, failed.data(), std::vector<std::size_t>(n, 1), DataType::kInt64,
                  TrafficKind::kControl);
  std::string ranks;
  for (std::size_t r = 0; r < n; ++r) {
    if (failed[r] != 0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  if (ranks.empty()) return;
  if (!error.empty()) throw config::ConfigError(error, config::ConfigError::OnEveryRank{});
  throw config::ConfigError(
      "stopping: start-up failed on rank " + ranks + " (its error is printed there)",
      config::ConfigError::OnEveryRank{});
}

}  // namespace gw
