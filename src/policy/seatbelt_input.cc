#include "policy/seatbelt_input.h"

#include <iterator>

#include "policy/carve_outs.h"
#include "policy/glob.h"
#include "policy/paths.h"

namespace uexec::policy {

using base::Result;

Result<SeatbeltInput> seatbelt_input(const PermissionProfile& profile, const ResolvedPolicy& resolved,
                                     const std::vector<std::string>& env, const std::string& control_dir,
                                     const std::string& state_dir) {
  SeatbeltInput in;
  in.full_read = true;
  in.full_write = resolved.full_write;
  if (!in.full_write) {
    std::vector<std::string> names(std::begin(kProtectedNames), std::end(kProtectedNames));
    names.insert(names.end(), profile.extra_protected_names.begin(), profile.extra_protected_names.end());
    for (const auto& w : resolved.writable) {
      SeatbeltWritableRoot root{w, {}, names};
      for (const auto& ro : resolved.read_only)
        if (ro != w && path_within(ro, w)) root.read_only.push_back(ro);
      in.writable.push_back(std::move(root));
    }
  }
  for (const auto& d : resolved.deny_patterns) {
    if (has_glob_chars(d)) in.deny_globs.push_back({d, ""});
    else in.deny_paths.push_back(d);
  }
  in.network = resolved.network;
  SeatbeltProxy proxy = seatbelt_proxy_from_env(env);
  in.proxy_ports = proxy.ports;
  in.proxy_configured = proxy.configured;
  in.allow_unix_sockets = profile.allow_unix_sockets;
  in.control_dir = control_dir;
  in.state_dir = state_dir;
  if (auto ok = check_seatbelt_input(in); !ok) return std::move(ok).error();
  return in;
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !word.empty() && word.find_first_not_of(
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
                                      std::string::npos;
    if (plain) {
      out += word;
      continue;
    }
    out += '\'';
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace uexec::policy
