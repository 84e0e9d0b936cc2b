#pragma once

#include <string>
#include <vector>

namespace ddprun {

/// How an operator knows an agent of an elastic job by its id ("<address>/<pid>/<port>"):
/// its host, with the agent's pid only where another agent among `others` (the ids of
/// its round, or whatever ids are known) has the same host: "10.0.0.2", or
/// "127.0.0.1 (pid 20393)". An id of another form is its own name.
std::string node_name(const std::string& id, const std::vector<std::string>& others);

/// node_name() of each of `ids`, joined by ", "; `ids` count among the others.
std::string node_names(const std::vector<std::string>& ids, std::vector<std::string> others);

}  // namespace ddprun
