// sandbox_flags.cc: the front doors' default sandbox flags (sandbox_flags.h).
#include "cli/sandbox_flags.h"

namespace uexec::cli {

void SandboxFlags::seed(const UserConfig& config) {
  if (config.sandbox_mode) profile = policy::PermissionProfile::for_mode(*config.sandbox_mode);
  backend = config.backend;
  writable = config.writable;
  deny_read = config.deny_read;
  writable_seeded_ = !writable.empty();
  deny_read_seeded_ = !deny_read.empty();
  network = config.network;
  approval = config.approval;
}

void SandboxFlags::declare(Flags& flags) {
  // A later error replaces an earlier one: the last bad flag is the one reported.
  auto needs_value = [this](const char* flag) {
    return [this, flag] {
      flagged = true;
      error = std::string(flag) + " needs a value";
      return Flags::Verdict{};
    };
  };
  flags.value({"--sandbox"}, [this](const std::string& v) {
    flagged = true;
    auto m = policy::parse_sandbox_mode(v);
    if (!m) error = m.error().context;
    else profile = policy::PermissionProfile::for_mode(*m);
    return Flags::Verdict{};
  }, needs_value("--sandbox"));
  flags.value({"--writable"}, [this](const std::string& v) {
    flagged = true;
    if (writable_seeded_) writable.clear();
    writable_seeded_ = false;
    writable.push_back(v);
    return Flags::Verdict{};
  }, needs_value("--writable"));
  flags.value({"--deny-read"}, [this](const std::string& v) {
    flagged = true;
    if (deny_read_seeded_) deny_read.clear();
    deny_read_seeded_ = false;
    deny_read.push_back(v);
    return Flags::Verdict{};
  }, needs_value("--deny-read"));
  flags.value({"--network"}, [this](const std::string& v) {
    flagged = true;
    if (v != "on" && v != "off") error = "--network needs on or off";
    network = v == "on";
    return Flags::Verdict{};
  }, needs_value("--network"));
  flags.value({"--backend"}, [this](const std::string& v) {
    flagged = true;
    auto b = policy::parse_backend(v);
    if (!b) error = b.error().context;
    else backend = *b;
    return Flags::Verdict{};
  }, needs_value("--backend"));
  flags.value({"--approval"}, [this](const std::string& v) {
    flagged = true;
    auto p = policy::parse_approval_policy(v);
    if (!p) error = p.error().context;
    else approval = *p;
    return Flags::Verdict{};
  }, needs_value("--approval"));
}

bool SandboxFlags::finish() {
  if (!error.empty()) return false;
  if (!profile) {
    if (!writable.empty() || !deny_read.empty() || network || approval != policy::ApprovalPolicy::kNever)
      error = "sandbox options need --sandbox MODE";
    return error.empty();
  }
  profile->writable_roots = writable;
  profile->deny_read = deny_read;
  if (network) profile->network = *network;
  return true;
}

}  // namespace uexec::cli
