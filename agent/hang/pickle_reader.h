#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace ddprun::agent {

/// A pickle that cannot be read: truncated, malformed, or using what read_pickle
/// does not take.
class PickleError : public Error {
 public:
  using Error::Error;
};

/// Reads the data of a pickle (protocols 2 to 5, as Python's pickler and TorchScript's
/// write them) into JSON: dicts become objects (keys as text), lists and tuples arrays,
/// bytes are dropped (null). It never builds objects: a call of a global (REDUCE) gives
/// its first argument for TorchScript's wrappers (`torch.jit._pickle.build_intlist(l)`,
/// `restore_type_tag(value, type)`, which tags every list and dict it writes) and null
/// for anything else. Throws PickleError; the input is untrusted.
nlohmann::json read_pickle(std::string_view bytes);

}  // namespace ddprun::agent
