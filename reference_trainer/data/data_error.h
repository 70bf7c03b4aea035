// The exception every data loader throws when a data file is missing, unreadable or malformed.
#pragma once

#include <stdexcept>

namespace gw::trainer {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appended to "file not found" and "cannot open" messages: the usual fix on these machines.
inline constexpr char kMissingDataHint[] =
    "install the Debian package dataset-fashion-mnist or pass --data-dir";

}  // namespace gw::trainer
