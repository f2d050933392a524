// cmd_client.cc: the daemon's CLI clients over its Unix socket.
//
//   uexec start [--tty] [--cwd DIR] -- CMD...   start a process in the daemon; prints its ID
//   uexec ls [--all]                            processes (all sessions with --all)
//   uexec send ID TEXT [--no-newline]           type TEXT (then Enter) into a process
//   uexec kill ID [--signal S]                  terminate (escalating) or send one signal
//   uexec logs ID [--follow]                    retained output; --follow streams until it ends
//   uexec attach ID                             raw-mode terminal on a process: replay, live
//                                               output, input, resize; Ctrl-] detaches
//
// An ID is what `uexec ls` prints: SESSION/PROCESS (a unique prefix of the session is
// enough), or just PROCESS when no other session has one by that name.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "base/terminal_text.h"
#include "cli/asciicast.h"
#include "cli/commands.h"
#include "cli/daemon_autostart.h"
#include "cli/daemon_lock.h"
#include "cli/flags.h"
#include "cli/session_defaults.h"
#include "journal/journal_format.h"
#include "policy/control_registry.h"
#include "pty/pty_pair.h"
#include "rpc/base64.h"
#include "rpc/client.h"
#include "rpc/process_control_methods.h"
#include "rpc/unix_server.h"

namespace uexec::cli {

std::string client_socket_path() {
  const char* env = std::getenv("UEXEC_SOCKET");
  return env && *env ? env : rpc::default_socket_path();
}

namespace {

using rpc::json;

struct Target {
  std::string session, process;
  bool tty = false;
  json row;  // its process/list entry
};

// The daemon's client, or nullopt after saying why; `*code` is then the exit code: 1 when no
// daemon runs there (as `tmux ls` without a server), 125 for anything else.
// With `why`, the message goes there instead of stderr.
std::optional<rpc::Client> connect(int* code, long ttl = 10000, std::string* why = nullptr) {
  const std::string socket = client_socket_path();
  auto c = rpc::Client::connect_unix(socket, ttl);
  if (!c) {
    const int err = c.error().sys_errno;
    std::string text;
    if (err == ENOENT || err == ECONNREFUSED) {
      text = fmt::format("uexec: no daemon runs on unix:{} (`uexec start` starts one, or run `uexec serve`)\n", socket);
      *code = kExitRefused;
    } else {
      text = fmt::format("uexec: {}\n", c.error().message());
      *code = kExitInternal;
    }
    if (why) *why = text;
    else std::fputs(text.c_str(), stderr);
    return std::nullopt;
  }
  return std::move(c).value();
}

// Finds the process an ID names, from process/list {all:true}. When it cannot, it says why on
// stderr, or into `*why` when given.
std::optional<Target> resolve(rpc::Client& c, const std::string& id, std::string* why = nullptr) {
  auto say = [why](const std::string& text) {
    if (why) *why = text;
    else std::fputs(text.c_str(), stderr);
  };
  auto list = c.call("process/list", {{"all", true}});
  if (!list) {
    say(fmt::format("uexec: {}\n", list.error().context));
    return std::nullopt;
  }
  std::string sess_part, proc_part = id;
  if (auto slash = id.find('/'); slash != std::string::npos) {
    sess_part = id.substr(0, slash);
    proc_part = id.substr(slash + 1);
  }
  // A target is SESSION/PROCESS (the session part may be any prefix), PROCESS alone when it
  // is unique, or a name (`start --name`, an MCP session's name), as tmux's targets.
  std::vector<Target> hits, named;
  for (const auto& p : (*list)["processes"]) {
    std::string sid = p["sessionId"], pid = p["processId"];
    if (sess_part.empty() && p["name"].is_string() && p["name"] == id) named.push_back({sid, pid, p.value("tty", false), p});
    if (pid != proc_part) continue;
    if (!sess_part.empty() && sid.rfind(sess_part, 0) != 0) continue;
    hits.push_back({sid, pid, p.value("tty", false), p});
  }
  if (hits.empty()) hits = std::move(named);
  if (hits.size() == 1) return hits[0];
  if (hits.empty()) {
    // One that went lately: say when and why (the newest record of that id).
    auto recent = c.call("process/list", {{"all", true}, {"includeEnded", true}});
    const json ended = recent ? recent->value("ended", json::array()) : json::array();
    for (auto it = ended.rbegin(); it != ended.rend(); ++it) {
      std::string sid = it->value("sessionId", ""), pid = it->value("processId", "");
      if (pid != proc_part || (!sess_part.empty() && sid.rfind(sess_part, 0) != 0)) continue;
      std::time_t at = static_cast<std::time_t>(it->value("atMs", 0LL) / 1000);
      char when[32] = "?";
      std::tm tm{};
      if (::localtime_r(&at, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
      const std::string reason = it->value("reason", "");
      const char* gone = reason == "exited"   ? "expired: a finished process is kept for `uexec serve --retain-exited` (24h by default)"
                         : reason == "pruned" ? "was removed to make room: the daemon's process limit was reached"
                         : reason == "killed" ? "was killed with the client session that started it"
                                              : "ended";
      say(fmt::format("uexec: {} {}; it went at {}\n", id, gone, when));
      return std::nullopt;
    }
  }
  say(hits.empty() ? fmt::format("uexec: no process {} (see `uexec ls`)\n", id)
                   : fmt::format("uexec: {} is ambiguous: name it as SESSION/PROCESS (see `uexec ls`)\n", id));
  return std::nullopt;
}

json addr(const Target& t) { return {{"processId", t.process}, {"sessionId", t.session}}; }

// Connects, finds the process `id` names and runs `fn` with the connection and the process;
// returns what `fn` returns. Otherwise it says why and returns the exit code.
template <class Fn>
int with_target(const std::string& id, Fn&& fn) {
  int code = 0;
  auto c = connect(&code);
  if (!c) return code;
  auto t = resolve(*c, id);
  if (!t) return 1;
  return fn(&*c, &*t);
}

void write_out(const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(1, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

constexpr const char* kLsUsage =
    "usage: uexec ls [--all]\n  The daemon's processes: id, name, pid, state, tty, exit code, command. Every command\n"
    "  that takes an ID also takes a name, or the process part of the ID alone when it is unique.\n"
    "  --all: also the processes that went lately (state expired, pruned, killed or ended, and\n"
    "  when), and uexec's own short-lived probe sessions.\n";
constexpr const char* kStartUsage =
    "usage: uexec start [--tty] [--cwd DIR] [--name NAME] [--] CMD [ARG...]\n"
    "  Starts CMD in the daemon and prints its ID. With --name, NAME (1-64 of A-Za-z0-9._-, unique\n"
    "  among running processes) names it for every other command: uexec logs NAME.\n";
constexpr const char* kSendUsage = "usage: uexec send ID TEXT [--no-newline]\n  Types TEXT (and Enter) into a process.\n";
constexpr const char* kKillUsage =
    "usage: uexec kill ID [--signal SIGNAL]\n  Terminates a process (escalating), or sends one signal: INT, TERM, KILL,"
    " HUP, QUIT, TSTP, CONT\n  (as names, SIGNAMES or numbers), or interrupt, terminate, kill, hangup, quit, suspend,"
    " continue.\n";
constexpr const char* kLogsUsage =
    "usage: uexec logs ID [--follow | --asciicast]\n  A process's retained output; --follow streams on until it ends and"
    " exits with its code.\n  --asciicast writes it as an asciicast v2 recording, with the times it came at\n"
    "  (`uexec logs ID --asciicast > out.cast; asciinema play out.cast`).\n"
    "  A process the daemon no longer has (it expired, the daemon restarted or crashed) is read\n"
    "  from the journal when `uexec serve --journal` kept one, with how it ended.\n";
constexpr const char* kAttachUsage =
    "usage: uexec attach ID\n  Your terminal on a process; Ctrl-] detaches. A process without a terminal (started\n"
    "  without --tty) gets your input a line at a time; Ctrl-C interrupts it, Ctrl-D ends its input.\n";

// A client command's parse: -h/--help prints its usage (exit 0), an error prints the error and
// the usage (exit 2); nullopt when the command goes on.
std::optional<int> settle_parse(const ParsedArgs& parsed, const char* cmd, const char* usage) {
  if (parsed.help) {
    std::fputs(usage, stdout);
    return 0;
  }
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "uexec %s: %s\n%s", cmd, parsed.error.c_str(), usage);
    return kExitUsage;
  }
  return std::nullopt;
}

int cmd_ls(const std::vector<std::string>& args) {
  bool all = false;
  Flags flags(Unmatched::kRefuse, "argument");
  flags.help();
  flags.on({"--all"}, [&] { all = true; });
  if (auto done = settle_parse(flags.parse(args), "ls", kLsUsage)) return *done;
  int code = 0;
  auto c = connect(&code);
  if (!c) return code;
  auto list = c->call("process/list", {{"all", true}, {"includeEnded", all}});
  if (!list) {
    std::fprintf(stderr, "uexec ls: %s\n", list.error().context.c_str());
    return kExitInternal;
  }
  // Columns as wide as their widest entry (a long id or name no longer shifts the rest).
  struct Row {
    std::string id, name, pid, state, tty, exit, cmd;
  };
  std::vector<Row> rows = {{"ID", "NAME", "PID", "STATE", "TTY", "EXIT", "COMMAND"}};
  for (const auto& p : (*list)["processes"]) {
    if (!all && p.value("clientName", "") == "uexec-cli-probe") continue;
    std::string cmd;
    for (const auto& a : p["argv"]) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
    // Ids, names and command lines are whatever their clients chose: shown, not sent, to the terminal.
    rows.push_back({base::terminal_text(p["sessionId"].get<std::string>().substr(0, 8) + "/" +
                                        p["processId"].get<std::string>()),
                    p["name"].is_string() ? base::terminal_text(p["name"].get<std::string>()) : "-",
                    std::to_string(p.value("pid", 0)), base::terminal_text(p.value("state", "?")),
                    p.value("tty", false) ? "yes" : "no",
                    p["exitCode"].is_null() ? "-" : std::to_string(p["exitCode"].get<int>()), base::terminal_text(cmd)});
  }
  // --all: what went lately, oldest first, with why and when (its output is gone with it).
  for (const auto& e : list->value("ended", json::array())) {
    const std::string reason = e.value("reason", "");
    const char* state = reason == "exited" ? "expired" : reason == "pruned" ? "pruned" : reason == "killed" ? "killed" : "ended";
    std::time_t at = static_cast<std::time_t>(e.value("atMs", 0LL) / 1000);
    char when[32] = "?";
    std::tm tm{};
    if (::localtime_r(&at, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    rows.push_back({base::terminal_text(e.value("sessionId", "").substr(0, 8) + "/" + e.value("processId", "")), "-", "-",
                    state, "-", "-",
                    std::string("(went at ") + when + ")"});
  }
  std::size_t w[6] = {};
  for (const auto& r : rows) {
    const std::string* fields[6] = {&r.id, &r.name, &r.pid, &r.state, &r.tty, &r.exit};
    for (std::size_t i = 0; i < 6; ++i) w[i] = std::max(w[i], fields[i]->size());
  }
  for (const auto& r : rows)
    std::printf("%-*s  %-*s  %-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(w[0]), r.id.c_str(), static_cast<int>(w[1]),
                r.name.c_str(), static_cast<int>(w[2]), r.pid.c_str(), static_cast<int>(w[3]), r.state.c_str(),
                static_cast<int>(w[4]), r.tty.c_str(), static_cast<int>(w[5]), r.exit.c_str(), r.cmd.c_str());
  return 0;
}

int cmd_start(const std::vector<std::string>& args) {
  bool tty = false;
  std::string cwd, name;
  Flags flags(Unmatched::kEndsFlagsUnlessDashed);  // the command starts at its first word (`--` is optional)
  flags.value({"--name", "-n"}, [&](const std::string& v) {
    name = v;
    return Flags::Verdict{};
  });
  flags.help();
  flags.double_dash_ends_flags();
  flags.on({"--tty", "-t"}, [&] { tty = true; });
  flags.value({"--cwd"}, [&](const std::string& v) {
    cwd = v;
    return Flags::Verdict{};
  });
  ParsedArgs parsed = flags.parse(args);
  if (auto done = settle_parse(parsed, "start", kStartUsage)) return *done;
  std::vector<std::string> argv = parsed.rest;
  if (argv.empty()) {
    std::fputs(kStartUsage, stderr);
    return kExitUsage;
  }
  // No daemon yet: start one, as tmux starts its server (daemon_autostart.h).
  if (auto started = ensure_daemon(client_socket_path()); !started) {
    std::fprintf(stderr, "uexec start: %s\n", started.error().message().c_str());
    return kExitInternal;
  } else if (*started > 0) {
    std::fprintf(stderr, "uexec start: started the daemon (pid %d; log: %s; `uexec stop` stops it)\n",
                 static_cast<int>(*started), autostart_log_path(client_socket_path()).c_str());
  }
  int code = 0;
  auto c = connect(&code, -1);  // what we start keeps running after we disconnect
  if (!c) return code;
  json env = json::object();
  for (const auto& kv : process_environment()) {
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (cwd.empty()) cwd = current_directory();
  std::string pid = fmt::format("p{}", ::getpid());
  json params = {{"processId", pid}, {"argv", argv}, {"cwd", cwd},          {"env", env},
                 {"tty", tty},       {"pipeStdin", !tty}, {"subscribe", false}};
  if (!name.empty()) params["name"] = name;
  auto r = c->call("process/start", params);
  if (!r && r.error().code == base::Errc::kExecFailed) {
    // The words and exit codes of `uexec run` for the same failure.
    std::fprintf(stderr, "uexec: cannot run '%s': %s\n", argv[0].c_str(), r.error().message().c_str());
    return exit_code_for_spawn_error(r.error());
  }
  if (!r) {  // refused before anything ran: a name in use, the process limit, a bad request
    std::fprintf(stderr, "uexec start: %s\n", r.error().context.c_str());
    return kExitRefused;
  }
  std::printf("%s/%s\n", c->session_id().substr(0, 8).c_str(), pid.c_str());
  return 0;
}

int cmd_send(const std::vector<std::string>& args) {
  bool newline = true;
  Flags flags(Unmatched::kCollect);
  flags.help();
  flags.on({"--no-newline", "-n"}, [&] { newline = false; });
  ParsedArgs parsed = flags.parse(args);
  if (auto done = settle_parse(parsed, "send", kSendUsage)) return *done;
  std::vector<std::string> pos = parsed.rest;
  if (pos.size() != 2) {
    std::fputs(kSendUsage, stderr);
    return kExitUsage;
  }
  return with_target(pos[0], [&](rpc::Client* c, const Target* t) {
    std::string text = pos[1] + (newline ? (t->tty ? "\r" : "\n") : "");
    json params = addr(*t);
    params["chunk"] = rpc::base64_encode(text);
    auto r = c->call("process/write", params);
    if (!r || (*r)["status"] != "accepted") {
      std::fprintf(stderr, "uexec send: %s\n", r ? ("not delivered: " + (*r)["status"].get<std::string>()).c_str()
                                                 : r.error().context.c_str());
      return 1;
    }
    return 0;
  });
}

// A signal as kill(1) takes it (INT, SIGINT, int, 2) or as the protocol names it
// (interrupt): the protocol's name, or nothing when the daemon cannot send it.
std::optional<std::string> protocol_signal(const std::string& given) {
  const auto& names = rpc::ProcessControlMethods::signal_names();
  for (const auto& [name, num] : names)
    if (given == name) return name;
  int signum = 0;
  if (!given.empty() && given.find_first_not_of("0123456789") == std::string::npos && given.size() < 4) {
    signum = std::atoi(given.c_str());
  } else {
    std::string abbrev;
    for (char ch : given) abbrev += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    if (abbrev.rfind("SIG", 0) == 0) abbrev.erase(0, 3);
    for (int n = 1; n < NSIG && signum == 0; ++n)
      if (const char* a = ::sigabbrev_np(n); a && abbrev == a) signum = n;
  }
  for (const auto& [name, num] : names)
    if (num == signum) return name;
  return std::nullopt;
}

int cmd_kill(const std::vector<std::string>& args) {
  std::string sig;
  Flags flags(Unmatched::kCollect);
  bool sig_given = false;
  flags.value({"--signal", "-s"}, [&](const std::string& v) {
    sig = v;
    sig_given = true;
    return Flags::Verdict{};
  });
  flags.help();
  ParsedArgs parsed = flags.parse(args);
  if (auto done = settle_parse(parsed, "kill", kKillUsage)) return *done;
  std::vector<std::string> pos = parsed.rest;
  if (pos.size() != 1) {
    std::fputs(kKillUsage, stderr);
    return kExitUsage;
  }
  if (sig_given) {
    auto name = protocol_signal(sig);
    if (!name) {
      std::fprintf(stderr, "uexec kill: the daemon cannot send signal '%s'; it sends INT, TERM, KILL, HUP, QUIT, TSTP "
                   "and CONT (by name, SIGNAME or number)\n", sig.c_str());
      return kExitUsage;
    }
    sig = *name;
  }
  return with_target(pos[0], [&](rpc::Client* c, const Target* t) {
    json params = addr(*t);
    base::Result<json> r = json();
    if (sig.empty()) {
      r = c->call("process/terminate", params);
    } else {
      params["signal"] = sig;
      r = c->call("process/signal", params);
    }
    if (!r) {
      std::fprintf(stderr, "uexec kill: %s\n", r.error().context.c_str());
      return 1;
    }
    return 0;
  });
}

// Handles the notifications already received: `t`'s output goes to stdout, its exit code to
// *code. True once `t` is closed.
bool take_notifications(rpc::Client& c, const Target& t, int* code, std::uint64_t* last_seq = nullptr) {
  while (auto n = c.next_notification(0)) {
    const json& p = (*n)["params"];
    if (p.value("processId", "") != t.process) continue;
    std::string m = (*n)["method"];
    if (m == "process/output") {
      if (auto bytes = rpc::base64_decode(p.value("chunk", ""))) write_out(*bytes);
      if (last_seq) *last_seq = std::max<std::uint64_t>(*last_seq, p.value("seq", std::uint64_t{0}));
    } else if (m == "process/exited") {
      *code = p.value("exitCode", -1);
    } else if (m == "process/closed") {
      return true;
    }
  }
  return false;
}

// Streams notifications for `t` to stdout until `closed`; returns the exit code (or -1).
int stream(rpc::Client& c, const Target& t) {
  int code = -1;
  while (!take_notifications(c, t, &code))
    if (!c.pump(-1)) break;
  return code;
}

// The recording's writer for `t`: its size, start and command from its process/list row.
CastWriter cast_writer_of(const Target& t) {
  CastHeader h;
  const json& size = t.row.contains("size") && t.row["size"].is_object() ? t.row["size"] : json::object();
  if (t.tty) {
    h.width = size.value("cols", 80);
    h.height = size.value("rows", 24);
  }
  h.timestamp = t.row.value("startedAtMs", 0LL) / 1000;
  if (t.row.contains("argv") && t.row["argv"].is_array())
    for (const auto& a : t.row["argv"])
      if (a.is_string()) h.command += (h.command.empty() ? "" : " ") + a.get<std::string>();
  return CastWriter(h, !t.tty);
}

// The asciicast v2 recording of `t`'s chunks (with atMs) and the evicted middle, if any.
std::string cast_of(const Target& t, const json& chunks, const json& omitted) {
  CastWriter w = cast_writer_of(t);
  std::string out = w.header();
  const std::uint64_t gap_after = omitted.is_null() ? 0 : omitted.value("toSeq", 0ull);
  bool gap_done = omitted.is_null();
  for (const auto& ch : chunks) {
    const auto at = ch.value("atMs", 0u);
    if (!gap_done && ch.value("seq", 0ull) > gap_after) {
      out += w.gap(at, omitted.value("bytes", 0ull));
      gap_done = true;
    }
    if (auto bytes = rpc::base64_decode(ch.value("chunk", ""))) out += w.chunk(at, *bytes);
  }
  return out + w.finish();
}

// Every retained chunk of `t`, read in pages (process/read's maxBytes), each with `atMs` when
// `timestamps`; `omitted` is the evicted middle's report, or null. False after saying why.
bool read_retained(rpc::Client& c, const Target& t, bool timestamps, json* chunks, json* omitted) {
  *chunks = json::array();
  *omitted = nullptr;
  std::uint64_t after = 0;
  for (;;) {
    json params = addr(t);
    params["afterSeq"] = after;
    params["maxBytes"] = 1 << 20;
    if (timestamps) params["timestamps"] = true;
    auto r = c.call("process/read", params);
    if (!r) {
      std::fprintf(stderr, "uexec logs: %s\n", r.error().context.c_str());
      return false;
    }
    if (!(*r)["omitted"].is_null()) *omitted = (*r)["omitted"];
    const json& got = (*r)["chunks"];
    for (const auto& ch : got) chunks->push_back(ch);
    // Until a page brings nothing new (the first one past the end is empty).
    std::uint64_t last = got.empty() ? after : got.back().value("seq", after);
    if (last <= after) return true;
    after = last;
  }
}

// `uexec logs` of a process the daemon does not have (it went, the daemon restarted, none
// runs): its journal under `root` (journal/journal_format.h), when one names `id`. nullopt: none does.
std::optional<int> logs_from_journal(const std::string& root, const std::string& id, bool asciicast) {
  auto found = root.empty() ? std::nullopt : journal::find_journal(root, id);
  if (!found) return std::nullopt;
  auto got = journal::read_journal(found->dir);
  if (!got) {
    std::fprintf(stderr, "uexec logs: %s\n", got.error().message().c_str());
    return 1;
  }
  const json& meta = got->meta;
  if (asciicast) {
    Target t;
    t.tty = meta.value("tty", false);
    t.row = meta;  // argv, size and startedAtMs are named as in process/list
    std::string out;
    CastWriter w = cast_writer_of(t);
    out = w.header();
    for (const auto& ch : got->chunks) {
      if (ch.missing_before > 0) out += w.gap(ch.at_ms, ch.missing_before);
      out += w.chunk(ch.at_ms, ch.bytes);
    }
    write_out(out + w.finish());
  } else {
    for (const auto& ch : got->chunks) write_out(ch.bytes);
  }
  std::string who = meta.contains("agentSessionId") ? "session " + meta["agentSessionId"].dump()
                    : meta.value("sessionId", "").empty() ? meta.value("processId", "")
                                                          : meta.value("sessionId", "") + "/" + meta.value("processId", "");
  std::fprintf(stderr, "uexec logs: %s, from the journal (%s): %s\n", base::terminal_text(who).c_str(),
               base::terminal_text(found->dir).c_str(), base::terminal_text(journal::ending_text(meta)).c_str());
  if (got->missing > 0)
    std::fprintf(stderr, "uexec logs: %llu bytes were not kept (the journal keeps each process's first and last parts)\n",
                 static_cast<unsigned long long>(got->missing));
  if (got->torn) std::fputs("uexec logs: its last record was cut short (the daemon stopped while writing it)\n", stderr);
  return 0;
}

int cmd_logs(const std::vector<std::string>& args) {
  bool follow = false, asciicast = false;
  Flags flags(Unmatched::kCollect);
  flags.help();
  flags.on({"--follow", "-f"}, [&] { follow = true; });
  flags.on({"--asciicast"}, [&] { asciicast = true; });
  ParsedArgs parsed = flags.parse(args);
  if (auto done = settle_parse(parsed, "logs", kLogsUsage)) return *done;
  std::vector<std::string> pos = parsed.rest;
  if (pos.size() != 1 || (follow && asciicast)) {
    if (follow && asciicast) std::fputs("uexec logs: --follow and --asciicast exclude each other\n", stderr);
    std::fputs(kLogsUsage, stderr);
    return kExitUsage;
  }
  // The daemon's copy first (it is live); the journal for one the daemon does not have.
  int code = 0;
  std::string why;
  auto c = connect(&code, 10000, &why);
  std::optional<Target> t;
  if (c) t = resolve(*c, pos[0], &why);
  if (!t) {
    const std::string root = journal::default_root();
    if (auto from_journal = logs_from_journal(root, pos[0], asciicast)) return *from_journal;
    std::fputs(why.c_str(), stderr);
    if (!c && !root.empty() && ::access(root.c_str(), F_OK) == 0)
      std::fprintf(stderr, "uexec logs: and the journal (%s) has no process %s\n", root.c_str(), pos[0].c_str());
    return c ? 1 : code;
  }
  if (follow) {
    json params = addr(*t);
    params["afterSeq"] = 0;  // replay what is retained, then live
    if (auto r = c->call("process/subscribe", params); !r) {
      std::fprintf(stderr, "uexec logs: %s\n", r.error().context.c_str());
      return 1;
    }
    // The end is shown and reflected as `uexec run` does: the exit code (128+N for signal N).
    const int exit_code = stream(*c, *t);
    if (exit_code > 0) std::fprintf(stderr, "uexec logs: the process exited with code %d\n", exit_code);
    return exit_code >= 0 ? exit_code : 0;
  }
  json chunks, omitted;
  if (!read_retained(*c, *t, asciicast, &chunks, &omitted)) return 1;
  if (asciicast) {
    write_out(cast_of(*t, chunks, omitted));
    return 0;
  }
  for (const auto& ch : chunks)
    if (auto bytes = rpc::base64_decode(ch.value("chunk", ""))) write_out(*bytes);
  if (!omitted.is_null())
    std::fprintf(stderr, "uexec logs: %llu bytes in the middle were not retained\n",
                 static_cast<unsigned long long>(omitted.value("bytes", 0ull)));
  return 0;
}

volatile sig_atomic_t g_winch = 0;
volatile sig_atomic_t g_interrupt = 0;  // attach to a pipe session: ^C, for the process
volatile sig_atomic_t g_detach = 0;     // attach to a pipe session: ^] (VQUIT), detach

int cmd_attach(const std::vector<std::string>& args) {
  Flags flags(Unmatched::kCollect);
  flags.help();
  ParsedArgs parsed = flags.parse(args);
  if (auto done = settle_parse(parsed, "attach", kAttachUsage)) return *done;
  if (parsed.rest.size() != 1) {
    std::fputs(kAttachUsage, stderr);
    return kExitUsage;
  }
  return with_target(parsed.rest[0], [&](rpc::Client* first, const Target* t) {
    rpc::Client* c = first;            // the connection in use: a reconnect replaces it
    std::optional<rpc::Client> again;  // the one a reconnect made
    bool is_tty = ::isatty(0) == 1 && ::isatty(1) == 1;
    termios saved{};
    bool raw = false;
    if (is_tty && ::tcgetattr(0, &saved) == 0) {
      termios r = saved;
      if (t->tty) {
        ::cfmakeraw(&r);  // the session's own terminal does the echo, the editing and the signals
      } else {
        // A pipe session has no terminal of its own: ours stays a line terminal (echo, line
        // editing, "\n" shown as a new line); ^C interrupts the process and ^] detaches,
        // both as signals to us (VINTR, VQUIT) so that they act before Enter.
        r.c_lflag |= ICANON | ECHO | ISIG;
        r.c_oflag |= OPOST | ONLCR;
        r.c_cc[VINTR] = 0x03;
        r.c_cc[VQUIT] = 0x1d;
        r.c_cc[VSUSP] = _POSIX_VDISABLE;
        struct sigaction on {};
        on.sa_handler = [](int sig) { (sig == SIGINT ? g_interrupt : g_detach) = 1; };
        ::sigaction(SIGINT, &on, nullptr);
        ::sigaction(SIGQUIT, &on, nullptr);
      }
      raw = ::tcsetattr(0, TCSADRAIN, &r) == 0;
    }
    auto resize = [&] {
      if (!t->tty || !is_tty) return;
      if (auto sz = pty::get_size(0)) {
        json p = addr(*t);
        p["rows"] = sz->rows;
        p["cols"] = sz->cols;
        (void)c->call("process/resize", p);
      }
    };
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_winch = 1; };
    ::sigaction(SIGWINCH, &sa, nullptr);
    resize();
    if (is_tty && t->tty) {
      std::fprintf(stderr, "[attached to %s; Ctrl-] detaches]\r\n", args[0].c_str());
      // The repaint below covers that line, so the hint also goes where it stays visible: the
      // terminal's title (the old one pushed, and popped at the end; xterm's title stack).
      write_out(fmt::format("\x1b[22;0t\x1b]0;uexec attach {} (Ctrl-] detaches)\x07", args[0]));
    }
    if (is_tty && !t->tty)
      std::fprintf(stderr, "[attached to %s, which has no terminal: a line goes on Enter; Ctrl-C interrupts it, "
                   "Ctrl-D ends its input, Ctrl-] detaches]\n", args[0].c_str());
    // A terminal on a terminal: the screen model's repaint at our size, then the live tail
    // from its seq (no gap, no duplicate). Otherwise the retained output is replayed.
    std::uint64_t last_seq = 0;
    auto subscribe = [&]() -> base::Result<json> {
      json sub = addr(*t);
      sub["afterSeq"] = last_seq;
      if (t->tty && is_tty) {
        json sp = addr(*t);
        sp["format"] = "ansi";
        if (auto snap = c->call("process/snapshot", sp); snap && (*snap).contains("ansi")) {
          write_out((*snap)["ansi"].get<std::string>());
          sub["afterSeq"] = last_seq = (*snap).value("seq", last_seq);
        }
      }
      return c->call("process/subscribe", sub);
    };
    if (auto r = subscribe(); !r) {
      if (raw) ::tcsetattr(0, TCSADRAIN, &saved);
      std::fprintf(stderr, "uexec attach: %s\n", r.error().context.c_str());
      return 1;
    }
    // The daemon went (an upgrade, or a crash its holder recovers from) while the process may
    // run on under the next one: attach again for up to 30 s, from the last seq seen (a
    // terminal is repainted from the screen model first, as at the start).
    auto reattach = [&]() -> bool {
      const std::string socket = client_socket_path();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (std::chrono::steady_clock::now() < deadline && !g_detach) {
        if (DaemonLock::holder(socket) == 0) return false;  // nobody will come back
        if (auto nc = rpc::Client::connect_unix(socket); nc) {
          again.emplace(std::move(*nc));
          c = &*again;
          if (!subscribe()) return false;  // the process is gone
          g_winch = 1;                     // the size, in case it changed meanwhile
          return true;
        }
        ::usleep(100000);
      }
      return false;
    };

    int code = -1;
    bool detached = false;
    bool stdin_open = true;
    while (!take_notifications(*c, *t, &code, &last_seq)) {
      if (g_winch) {
        g_winch = 0;
        resize();
      }
      if (g_interrupt) {
        g_interrupt = 0;
        json sp = addr(*t);
        sp["signal"] = "interrupt";
        (void)c->call("process/signal", sp);
      }
      if (g_detach) {
        detached = true;
        break;
      }
      pollfd fds[2] = {{c->fd(), POLLIN, 0}, {0, POLLIN, 0}};
      int rc = ::poll(fds, stdin_open ? 2 : 1, 200);
      if (rc < 0) continue;
      if (fds[0].revents) {
        if (!c->pump(0) && !reattach()) break;
      }
      if (stdin_open && (fds[1].revents & (POLLIN | POLLHUP))) {
        char buf[4096];
        ssize_t n = ::read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 && is_tty && !t->tty) {
          // ^D on a line terminal: the end of the process's input, as in a shell pipeline.
          (void)c->call("process/closeStdin", addr(*t));
          stdin_open = false;
          continue;
        }
        if (n <= 0) break;
        std::string in(buf, static_cast<std::size_t>(n));
        if (auto k = in.find('\x1d'); k != std::string::npos) {  // Ctrl-]
          in.resize(k);
          detached = true;
        }
        if (!in.empty()) {
          json w = addr(*t);
          w["chunk"] = rpc::base64_encode(in);
          (void)c->call("process/write", w);
        }
        if (detached) break;
      }
    }
    if (raw) ::tcsetattr(0, TCSADRAIN, &saved);
    // Leave our terminal as we found it: the main screen, normal keys, no mouse, a cursor.
    // Resetting the scroll margins and origin mode homes the cursor, so they go between a
    // save and a restore of it (DECSC/DECRC): what follows is written below the last output,
    // not over the screen's first rows. (DECRC restores the origin mode too; with the margins
    // reset to the whole screen, either mode addresses the same cells.)
    if (is_tty && t->tty) write_out("\x1b[0m\x1b[?1049l\x1b[?1l\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1004l"
                                     "\x1b" "7\x1b[?6l\x1b[r\x1b" "8\x1b[?7h\x1b[?25h\x1b[23;0t");
    if (detached) {
      std::fprintf(stderr, "\r\n[detached; the process keeps running]\n");
      return 0;
    }
    if (code >= 0 && is_tty) std::fprintf(stderr, "\r\n[process exited with code %d]\n", code);
    return code >= 0 ? code : 0;
  });
}

// A command that takes no argument: its --help, or the usage for anything else.
std::optional<int> settle_no_arguments(const std::vector<std::string>& args, const char* cmd, const char* usage) {
  Flags flags(Unmatched::kRefuse, "argument");
  flags.help();
  return settle_parse(flags.parse(args), cmd, usage);
}

// `uexec stop`: the daemon on the clients' socket ends (as on SIGTERM: its sessions end too).
int cmd_stop(const std::vector<std::string>& args) {
  constexpr const char* kStopUsage =
      "usage: uexec stop\n  Stops the daemon at $UEXEC_SOCKET (else the default socket) as SIGTERM does (its\n"
      "  sessions end) and waits for it to exit. Exit 1 when none runs there.\n";
  if (auto done = settle_no_arguments(args, "stop", kStopUsage)) return *done;
  auto pid = DaemonLock::stop(client_socket_path(), std::chrono::seconds(15));
  if (!pid) {
    const bool expected = pid.error().code == base::Errc::kNotFound || pid.error().code == base::Errc::kLimit;
    std::fprintf(stderr, "uexec stop: %s\n", expected ? pid.error().context.c_str() : pid.error().message().c_str());
    return expected ? kExitRefused : kExitInternal;
  }
  std::fprintf(stderr, "uexec stop: stopped the daemon (pid %d)\n", static_cast<int>(*pid));
  return 0;
}

// `uexec url`: the web terminal's URL (with its token) of the daemon on the clients' socket.
int cmd_url(const std::vector<std::string>& args) {
  constexpr const char* kUrlUsage =
      "usage: uexec url\n  Prints the web terminal's URL, with its token, of the daemon at $UEXEC_SOCKET (else the\n"
      "  default socket). Exit 1 when none runs there or it serves no page (--no-ws, --no-web).\n";
  if (auto done = settle_no_arguments(args, "url", kUrlUsage)) return *done;
  const std::string socket = client_socket_path();
  if (DaemonLock::holder(socket) == 0) {
    std::fprintf(stderr, "uexec url: no daemon runs on unix:%s (start one with `uexec serve`)\n", socket.c_str());
    return kExitRefused;
  }
  std::ifstream in(policy::socket_url_path(socket));
  std::string url;
  if (!in || !std::getline(in, url) || url.empty()) {
    std::fprintf(stderr, "uexec url: the daemon on unix:%s serves no web page (it was started with --no-ws or "
                 "--no-web)\n", socket.c_str());
    return kExitRefused;
  }
  std::printf("%s\n", url.c_str());
  return 0;
}

}  // namespace

int cmd_client(const std::string& cmd, const std::vector<std::string>& args) {
  if (cmd == "stop") return cmd_stop(args);
  if (cmd == "url") return cmd_url(args);
  if (cmd == "ls") return cmd_ls(args);
  if (cmd == "start") return cmd_start(args);
  if (cmd == "send") return cmd_send(args);
  if (cmd == "kill") return cmd_kill(args);
  if (cmd == "logs") return cmd_logs(args);
  if (cmd == "attach") return cmd_attach(args);
  return kExitUsage;
}

}  // namespace uexec::cli
