// file_uri.h: file:// URIs as the protocol carries paths (cwd, sandbox roots).
#pragma once

#include <optional>
#include <string>

namespace uexec::rpc {

// "file:///a%20b" for "/a b": unreserved characters kept, everything else percent-encoded.
std::string file_uri(const std::string& path);
// A file:// URI (percent-decoded; host empty or localhost) or an absolute path; else nullopt.
std::optional<std::string> path_from_uri(const std::string& s);

}  // namespace uexec::rpc
