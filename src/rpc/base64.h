// base64.h: standard base64 with padding, for raw PTY bytes on the wire. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace uexec::rpc {

std::string base64_encode(std::string_view bytes);
// Appends the encoding of `bytes` to `out` (one resize, no per-character growth).
void base64_append(std::string& out, std::string_view bytes);
// nullopt on any character outside the alphabet, bad padding or a bad length.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace uexec::rpc
