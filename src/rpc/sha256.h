// sha256.h: SHA-256 (FIPS 180-4), for environment/info's stable providerId. Pure.
#pragma once

#include <string>
#include <string_view>

namespace uexec::rpc {

// Lowercase hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace uexec::rpc
