#include "holder/handover_json.h"

#include <memory>

namespace uexec::holder {

using nlohmann::json;

namespace {

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean() ? v.get<bool>() : fallback;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? v.get<std::string>() : fallback;
  } else {
    return v.is_number_integer() ? v.get<T>() : fallback;
  }
}

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

json view_json(const pty::FileView& v) {
  return {{"setidEvidence", v.setid_evidence}, {"byMounts", v.by_mounts},   {"fullWrite", v.full_write},
          {"privateTmp", v.private_tmp},       {"writable", v.writable},    {"readOnly", v.read_only},
          {"unreadable", v.unreadable},        {"judgesReads", v.judges_reads}};
}

std::shared_ptr<const pty::FileView> read_view(const json& j) {
  if (!j.is_object()) return nullptr;
  auto v = std::make_shared<pty::FileView>();
  v->setid_evidence = get_or(j, "setidEvidence", false);
  v->by_mounts = get_or(j, "byMounts", false);
  v->full_write = get_or(j, "fullWrite", false);
  v->private_tmp = get_or(j, "privateTmp", false);
  v->writable = strings(j, "writable");
  v->read_only = strings(j, "readOnly");
  v->unreadable = strings(j, "unreadable");
  v->judges_reads = get_or(j, "judgesReads", false);
  return v;
}

}  // namespace

json facts_json(const session::Handover& h) {
  json j = {{"tty", h.tty},
            {"stdinPipe", h.stdin_pipe},
            {"rows", h.size.rows},
            {"cols", h.size.cols},
            {"argv", h.argv},
            {"cwd", h.cwd},
            {"name", h.name},
            {"sandboxed", h.sandboxed},
            {"sandboxKind", h.sandbox_kind},
            {"seccomp", h.seccomp},
            {"mountView", h.mount_view},
            {"pidNamespace", h.pid_namespace},
            {"startedAtMs", h.started_wall_ms},
            {"cgroup", h.cgroup},
            {"marker", h.marker},
            {"lateDeny", h.late_deny}};
  if (h.fds.files) j["files"] = view_json(*h.fds.files);
  return j;
}

void read_facts(const json& f, session::Handover& h) {
  h.tty = get_or(f, "tty", false);
  h.stdin_pipe = get_or(f, "stdinPipe", false);
  h.size.rows = get_or<unsigned short>(f, "rows", 24);
  h.size.cols = get_or<unsigned short>(f, "cols", 80);
  h.argv = strings(f, "argv");
  h.cwd = get_or<std::string>(f, "cwd", "");
  h.name = get_or<std::string>(f, "name", "");
  h.sandboxed = get_or(f, "sandboxed", false);
  h.sandbox_kind = get_or<std::string>(f, "sandboxKind", "none");
  h.seccomp = get_or(f, "seccomp", false);
  h.mount_view = get_or(f, "mountView", false);
  h.pid_namespace = get_or(f, "pidNamespace", false);
  h.started_wall_ms = get_or<std::int64_t>(f, "startedAtMs", 0);
  h.cgroup = get_or<std::string>(f, "cgroup", "");
  h.marker = get_or<std::string>(f, "marker", "");
  h.late_deny = strings(f, "lateDeny");
  if (f.is_object() && f.contains("files")) h.fds.files = read_view(f["files"]);
}

void name_fds(const pty::HeldFds& held, json& names, std::vector<int>& fds) {
  names = json::array();
  auto add = [&](const char* name, int fd) {
    if (fd < 0) return;
    names.push_back(name);
    fds.push_back(fd);
  };
  add("out0", held.out[0]);
  add("out1", held.out[1]);
  add("status", held.status);
  add("pidfd", held.pidfd);
  add("listener", held.listener);
  add("mask", held.mask_requests);
}

void take_fds(Message& m, pty::AdoptedFds& out) {
  out.out[0] = m.take("out0");
  out.out[1] = m.take("out1");
  out.status = m.take("status");
  out.pidfd = m.take("pidfd");
  out.listener = m.take("listener");
  out.mask_requests = m.take("mask");
  out.stdin_pipe = m.take("stdin");
}

json exit_json(const pty::ExitStatus& st) {
  return {{"code", st.code}, {"signal", st.signal}, {"core", st.core_dumped}};
}

pty::ExitStatus read_exit(const json& j) {
  pty::ExitStatus st;
  st.code = get_or(j, "code", 255);
  st.signal = get_or(j, "signal", 0);
  st.core_dumped = get_or(j, "core", false);
  return st;
}

}  // namespace uexec::holder
