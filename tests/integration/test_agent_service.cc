// The agent tools on real processes (docs/agent.md §7): yields, exits, stdin rules,
// interactive shells, awaiting_input, until conditions, named sessions, pruning, tombstones,
// read_output, sandbox denial hooks, and the pain points (grandchildren, tee, pagers).
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <regex>
#include <set>

#include "agent/agent_service.h"
#include "session/containment.h"
#include "integration/session_helpers.h"

extern char** environ;

using namespace uexec;
using namespace uexec::test;
using agent::ExecParams;
using agent::Response;
using agent::WriteParams;

namespace {

base::Config agent_config() {
  base::Config cfg;
  cfg.close_drain = std::chrono::milliseconds{1000};
  cfg.agent.deterministic_ids = true;
  return cfg;
}

struct AgentFixture : ManagerFixture {
  std::unique_ptr<agent::AgentService> exec;
  explicit AgentFixture(base::Config cfg = agent_config()) : ManagerFixture(cfg) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.emplace_back(*e);
    exec = std::make_unique<agent::AgentService>(*pm, env, "/tmp");
  }
  ~AgentFixture() { exec.reset(); }

  template <class Start>
  base::Result<Response> wait_reply(Start start, std::chrono::milliseconds d = 60s) {
    std::optional<base::Result<Response>> out;
    start([&](base::Result<Response> r) { out.emplace(std::move(r)); });
    REQUIRE_MESSAGE(run_until([&] { return out.has_value(); }, d), "no reply");
    return std::move(*out);
  }
  base::Result<Response> exec_cmd(ExecParams p) {
    if (!p.login) p.login = false;  // fast: no profile scripts
    return wait_reply([&](agent::Reply r) { exec->exec_command(std::move(p), std::move(r)); });
  }
  base::Result<Response> write(WriteParams p) {
    return wait_reply([&](agent::Reply r) { exec->write_stdin(std::move(p), std::move(r)); });
  }
  base::Result<Response> kill(agent::KillParams p) {
    return wait_reply([&](agent::Reply r) { exec->kill_session(std::move(p), std::move(r)); });
  }
};

ExecParams cmd(std::string c, bool tty = false, long yield = 10000) {
  ExecParams p;
  p.cmd = std::move(c);
  p.tty = tty;
  p.yield_time_ms = yield;
  return p;
}

WriteParams input(long id, std::string chars, long yield = 2000) {
  WriteParams w;
  w.session_id = id;
  w.chars = std::move(chars);
  w.yield_time_ms = yield;
  return w;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("a command that exits within the yield returns exit_code and no session id") {
  AgentFixture f;
  auto t0 = std::chrono::steady_clock::now();
  auto r = f.exec_cmd(cmd("sleep 0.05; echo done", false, 30000));
  REQUIRE(r);
  CHECK(since(t0) < 5.0);  // not the 30 s yield (a hang guard, not a benchmark)
  CHECK(r->exit_code == 0);
  CHECK(!r->session_id);
  CHECK(r->output == "done\n");
  CHECK(r->text.find("Process exited with code 0\n") != std::string::npos);
  CHECK(std::regex_search(r->text, std::regex("^Chunk ID: [0-9a-f]{6}\nWall time: [0-9]+\\.[0-9]{4} seconds\n")));
  CHECK(r->state == "exited");
}

TEST_CASE("exit codes and signals on tty and pipes") {
  AgentFixture f;
  for (bool tty : {false, true}) {
    CAPTURE(tty);
    auto a = f.exec_cmd(cmd("exit 17", tty));
    REQUIRE(a);
    CHECK(a->exit_code == 17);
    auto b = f.exec_cmd(cmd("kill -9 $$", tty));
    REQUIRE(b);
    CHECK(b->exit_code == 137);
    CHECK(b->signal == "SIGKILL");
    CHECK(b->text.find("Signal: SIGKILL (sent by a signal not sent by uexec)") != std::string::npos);
  }
}

TEST_CASE("pipes by default; tty gives a terminal of 24x80 unless rows/cols") {
  AgentFixture f;
  auto a = f.exec_cmd(cmd("test -t 1 && echo tty || echo pipe"));
  CHECK(a->output == "pipe\n");
  auto b = f.exec_cmd(cmd("stty size", true));
  CHECK(b->output == "24 80\r\n");
  auto p = cmd("stty size", true);
  p.rows = 30;
  p.cols = 100;
  auto c = f.exec_cmd(p);
  CHECK(c->output == "30 100\r\n");
}

TEST_CASE("yield: a short yield returns without the tail, the next poll returns it") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("sleep 0.5; echo tail", false, 250));
  REQUIRE(r);
  REQUIRE(r->session_id);
  CHECK(r->output.find("tail") == std::string::npos);
  CHECK(r->text.find("Process running with session ID " + std::to_string(*r->session_id)) != std::string::npos);
  auto t0 = std::chrono::steady_clock::now();
  auto p = f.write(input(*r->session_id, "", 0));  // an empty poll: clamped up to 5000 ms
  REQUIRE(p);
  CHECK(p->output == "tail\n");
  CHECK(p->exit_code == 0);
  CHECK(since(t0) < 4.5);  // it returned at the exit, not at the 5 s poll floor
}

TEST_CASE("a yield above the maximum is capped and warns while the process runs") {
  base::Config cfg = agent_config();
  cfg.agent.yield_max = std::chrono::milliseconds{400};
  AgentFixture f(cfg);
  auto r = f.exec_cmd(cmd("sleep 5", false, 120000));
  REQUIRE(r);
  CHECK(r->session_id);
  CHECK(r->text.find("Warning: yield_time_ms 120000 exceeds the 400 ms maximum; waited 400 ms.") != std::string::npos);
}

TEST_CASE("bash -i keeps state across writes, is listed, and kill_session leaves a tombstone") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("PS1='$ ' exec bash --norc --noprofile -i", true, 3000));
  REQUIRE(r);
  REQUIRE(r->session_id);
  long id = *r->session_id;
  auto a = f.write(input(id, "export X=1\n"));
  REQUIRE(a);
  auto b = f.write(input(id, "echo value=$X\n"));
  REQUIRE(b);
  CHECK(b->output.find("value=1") != std::string::npos);
  auto list = f.exec->list_sessions({});
  CHECK(list.text.find(std::to_string(id)) != std::string::npos);
  CHECK(list.text.rfind("ID NAME STATE AGE IDLE TTY EXIT COMMAND\n", 0) == 0);
  agent::KillParams k;
  k.session_id = id;
  auto killed = f.kill(k);
  REQUIRE(killed);
  CHECK(killed->exit_code.has_value());
  CHECK(killed->text.find("(sent by kill_session)") != std::string::npos);
  auto after = f.write(input(id, "echo hi\n"));
  REQUIRE(!after);
  CHECK(after.error().context.find("write_stdin failed: Unknown process id " + std::to_string(id) + " (killed by kill_session") !=
        std::string::npos);
  CHECK(after.error().context.find("Last output:") != std::string::npos);
}

TEST_CASE("tty cat echoes through write_stdin under one id; ctrl-d ends it with exit 0 and no id") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("cat", true, 500));
  REQUIRE(r->session_id);
  long id = *r->session_id;
  auto a = f.write(input(id, "hello\n"));
  CHECK(a->output.find("hello") != std::string::npos);
  CHECK(a->session_id == id);
  WriteParams d;
  d.session_id = id;
  d.keys = {"ctrl-d"};
  d.yield_time_ms = 5000;
  auto e = f.write(d);
  REQUIRE(e);
  CHECK(e->exit_code == 0);
  CHECK(!e->session_id);
}

TEST_CASE("non-tty stdin rules: Ctrl-C is SIGINT, ctrl-d closes a piped stdin, no pipe is StdinClosed") {
  AgentFixture f;
  auto t = f.exec_cmd(cmd("trap 'echo INT-TRAP; exit 42' INT; echo ready; while :; do sleep 0.05; done", false, 1000));
  REQUIRE(t->session_id);
  auto ti = f.write(input(*t->session_id, "\x03", 5000));
  REQUIRE(ti);
  CHECK(ti->output.find("INT-TRAP") != std::string::npos);
  CHECK(ti->exit_code == 42);

  auto n = f.exec_cmd(cmd("sleep 30", false, 250));
  WriteParams cc;
  cc.session_id = n->session_id;
  cc.keys = {"ctrl-c"};
  cc.yield_time_ms = 5000;
  auto ni = f.write(cc);
  CHECK(ni->exit_code == 130);

  auto p = cmd("cat", false, 250);
  p.pipe_stdin = true;
  auto c = f.exec_cmd(p);
  REQUIRE(c->session_id);
  auto ci = f.write(input(*c->session_id, "piped\n"));
  CHECK(ci->output == "piped\n");
  auto cd = f.write(input(*c->session_id, "\x04", 5000));
  CHECK(cd->exit_code == 0);

  auto np = f.exec_cmd(cmd("sleep 30", false, 250));
  auto w = f.write(input(*np->session_id, "data"));
  REQUIRE(!w);
  CHECK(w.error().context ==
        "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true or pipe_stdin=true to "
        "keep stdin open");
}

TEST_CASE("a kill during a long poll makes the poll return at once with the exit and no id") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("sleep 100", false, 250));
  long id = *r->session_id;
  std::optional<base::Result<Response>> poll;
  WriteParams w;
  w.session_id = id;
  w.yield_time_ms = 60000;
  f.exec->write_stdin(w, [&](base::Result<Response> x) { poll.emplace(std::move(x)); });
  f.run_for(std::chrono::milliseconds{300});
  CHECK(!poll.has_value());
  auto t0 = std::chrono::steady_clock::now();
  agent::KillParams k;
  k.session_id = id;
  auto killed = f.kill(k);
  REQUIRE(f.run_until([&] { return poll.has_value(); }));
  CHECK(since(t0) < 10.0);
  REQUIRE(*poll);
  CHECK((*poll)->exit_code == 128 + SIGTERM);
  CHECK(!(*poll)->session_id);
}

TEST_CASE("a full-screen program waiting for keys is awaiting_input 'screen', with no prompt (top's last row is none)") {
  AgentFixture f;
  // On the alternate screen, then a table, then one key read with ICANON off, as top does.
  auto r = f.exec_cmd(cmd("printf '\\033[?1049h'; printf 'PID USER\\n  1 root\\n  2 last-row'; read -rsn1 k; "
                          "printf '\\033[?1049l'; echo key:$k",
                          true, 10000));
  REQUIRE(r);
  REQUIRE(r->session_id);
  CHECK(r->state == "awaiting_input");
  REQUIRE(r->awaiting_input);
  CHECK(r->awaiting_input->kind == "screen");
  CHECK(r->awaiting_input->prompt.empty());
  CHECK(r->text.find("Waiting for input: a full-screen program waits for keys (kernel)") != std::string::npos);
  CHECK(r->text.find("last-row\"") == std::string::npos);
  // The same read off the alternate screen is a raw prompt with its line.
  auto p = f.exec_cmd(cmd("printf 'Continue? '; read -rsn1 k; echo key:$k", true, 10000));
  REQUIRE(p);
  REQUIRE(p->awaiting_input);
  CHECK(p->awaiting_input->kind == "raw");
  CHECK(p->awaiting_input->prompt == "Continue? ");
}

TEST_CASE("a password prompt is detected as awaiting_input from the kernel; secret input is accepted") {
  AgentFixture f;
  auto t0 = std::chrono::steady_clock::now();
  auto r = f.exec_cmd(cmd("read -s -p 'Password: ' p; echo; echo got:${#p}", true, 10000));
  REQUIRE(r);
  CHECK(since(t0) < 5.0);
  REQUIRE(r->session_id);
  CHECK(r->state == "awaiting_input");
  CHECK(r->text.find("Waiting for input: password (kernel); prompt: \"Password: \"") != std::string::npos);
  REQUIRE(r->awaiting_input);
  CHECK(r->awaiting_input->kind == "password");
  WriteParams w;
  w.session_id = r->session_id;
  w.chars = "hunter2";
  w.keys = {"enter"};
  w.secret = true;
  w.yield_time_ms = 5000;
  auto g = f.write(w);
  REQUIRE(g);
  CHECK(g->output.find("got:7") != std::string::npos);
  CHECK(g->output.find("hunter2") == std::string::npos);

  // A secret to a tty that echoes is refused.
  auto e = f.exec_cmd(cmd("read line; echo $line", true, 1000));
  REQUIRE(e->session_id);
  WriteParams s;
  s.session_id = e->session_id;
  s.chars = "x\n";
  s.secret = true;
  auto refused = f.write(s);
  REQUIRE(!refused);
  CHECK(refused.error().context.find("secret input refused") != std::string::npos);
}

TEST_CASE("Ctrl-C in interactive bash kills the foreground sleep; the session lives; $? is 130") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("PS1='$ ' exec bash --norc --noprofile -i", true, 3000));
  long id = *r->session_id;
  CHECK(r->text.find("Waiting for input: raw (kernel)") != std::string::npos);
  auto s = f.write(input(id, "sleep 100\n", 1000));
  REQUIRE(s);
  WriteParams c;
  c.session_id = id;
  c.keys = {"ctrl-c"};
  c.yield_time_ms = 3000;
  auto ci = f.write(c);
  REQUIRE(ci);
  CHECK(ci->session_id == id);
  CHECK(ci->text.find("Waiting for input: raw") != std::string::npos);
  auto st = f.write(input(id, "echo status=$?\n"));
  CHECK(st->output.find("status=130") != std::string::npos);
}

TEST_CASE("until: regex, idle and port end the wait early and say why") {
  AgentFixture f;
  auto p = cmd("echo starting; sleep 0.2; echo 'server ready on 8080'; sleep 30", false, 20000);
  agent::Until u;
  u.regex_src = "ready on [0-9]+";
  u.regex = std::make_shared<const std::regex>(*u.regex_src);
  p.until = u;
  auto r = f.exec_cmd(p);
  REQUIRE(r);
  CHECK(r->fired == "regex");
  CHECK(r->text.find("Returned early: regex /ready on [0-9]+/ matched at byte 9") != std::string::npos);

  auto q = cmd("echo one; sleep 30", false, 20000);
  agent::Until idle;
  idle.idle = std::chrono::milliseconds{300};
  q.until = idle;
  auto i = f.exec_cmd(q);
  CHECK(i->fired == "idle");
  CHECK(i->text.find("Returned early: idle 300 ms") != std::string::npos);

  int port = 20000 + static_cast<int>(::getpid() % 20000);
  auto srv = cmd("exec python3 -m http.server --bind 127.0.0.1 " + std::to_string(port), false, 20000);
  agent::Until pu;
  pu.port = port;
  srv.until = pu;
  auto s = f.exec_cmd(srv);
  REQUIRE(s);
  CHECK(s->fired == "port");
  CHECK(s->text.find("Returned early: port " + std::to_string(port) + " listening (pid") != std::string::npos);
}

TEST_CASE("named sessions: same name and command is one process; another command is NameInUse; replace restarts") {
  AgentFixture f;
  auto p = cmd("sleep 60", false, 250);
  p.name = "devserver";
  auto a = f.exec_cmd(p);
  auto b = f.exec_cmd(p);
  REQUIRE(a->session_id);
  REQUIRE(b->session_id);
  CHECK(*a->session_id == *b->session_id);
  CHECK(b->text.find("Session name: devserver (existing)") != std::string::npos);
  auto other = cmd("sleep 61", false, 250);
  other.name = "devserver";
  auto c = f.exec_cmd(other);
  REQUIRE(!c);
  CHECK(c.error().context.find("session name devserver is used by session") != std::string::npos);
  other.replace = true;
  auto d = f.exec_cmd(other);
  REQUIRE(d->session_id);
  CHECK(*d->session_id != *a->session_id);
}

TEST_CASE("pruning: an exited session outside the 8 most recent goes first, else the LRU; the warning text") {
  base::Config cfg = agent_config();
  cfg.agent.max_sessions = 10;
  cfg.agent.warn_sessions = 9;
  AgentFixture f(cfg);
  std::vector<long> ids;
  for (int i = 0; i < 10; ++i) {
    auto r = f.exec_cmd(cmd(i == 1 ? "sleep 0.3; exit 0" : "sleep 60", false, 250));
    REQUIRE(r->session_id);
    ids.push_back(*r->session_id);
  }
  f.run_for(std::chrono::milliseconds{500});  // session ids[1] has exited, not yet reported
  auto r = f.exec_cmd(cmd("sleep 60", false, 250));
  REQUIRE(r);
  CHECK(r->text.find("Warning: session " + std::to_string(ids[1]) + " (`sleep 0.3; exit 0`) was closed to stay within 10 open sessions.") !=
        std::string::npos);
  CHECK(r->text.find("Warning: 10 of 10 sessions are open for this client.") != std::string::npos);
  auto w = f.write(input(ids[1], "x"));
  REQUIRE(!w);
  CHECK(w.error().context.find("to stay within 64 open sessions") != std::string::npos);
  // Next: no exited one left outside the 8 most recent: the plain LRU (ids[0]) goes.
  auto r2 = f.exec_cmd(cmd("sleep 60", false, 250));
  CHECK(r2->text.find("Warning: session " + std::to_string(ids[0]) + " ") != std::string::npos);
}

TEST_CASE("ids and tombstones: never issued, exited, and expired have distinct answers") {
  base::Config cfg = agent_config();
  cfg.agent.ended_linger = std::chrono::milliseconds{0};
  cfg.agent.tombstones_max = 1;
  AgentFixture f(cfg);
  auto never = f.write(input(99999, "x"));
  CHECK(never.error().context == "write_stdin failed: Unknown process id 99999 (no session with this id was started by this manager)");
  auto a = f.exec_cmd(cmd("exit 3"));
  long first = a->session;
  CHECK(first == 1000);
  f.run_for(std::chrono::milliseconds{50});
  auto e = f.write(input(first, "x"));
  CHECK(e.error().context.find("(exited with code 3 at ") != std::string::npos);
  auto b = f.exec_cmd(cmd("exit 4"));
  CHECK(b->session == 1001);
  // Both tombstoned after the (zero) linger sweep; only one tombstone is kept.
  f.run_for(std::chrono::milliseconds{100});
  auto c = f.exec_cmd(cmd("exit 5"));
  f.run_for(std::chrono::milliseconds{100});
  auto gone = f.write(input(first, "x"));
  CHECK(gone.error().context ==
        "write_stdin failed: Unknown process id 1000 (the session ended earlier and its record is no longer kept)");
}

TEST_CASE("read_output: range, tail lines, grep with context; a truncated middle comes back byte-exact") {
  AgentFixture f;
  auto p = cmd("for i in $(seq 1 2000); do echo \"line $i\"; done", false, 10000);
  p.max_output_tokens = 100;
  auto r = f.exec_cmd(p);
  REQUIRE(r);
  CHECK(r->exit_code == 0);
  REQUIRE(!r->omitted.empty());
  auto cut = r->omitted[0];
  CHECK(r->output.find("tokens truncated (read_output session_id=" + std::to_string(r->session)) != std::string::npos);
  // The header says it too (a client that cuts the middle of a long result keeps it), and names
  // the exited session.
  std::string header = r->text.substr(0, r->text.find("\nOutput:\n"));
  CHECK(header.find(fmt::format("Session ID: {} (exited", r->session)) != std::string::npos);
  CHECK(header.find(fmt::format("Omitted: bytes {}-{} (truncated); read_output session_id={} offset={} length={}",
                                cut.offset, cut.offset + cut.length, r->session, cut.offset, cut.length)) !=
        std::string::npos);
  agent::ReadParams rp;
  rp.session_id = r->session;
  rp.offset = cut.offset;
  rp.length = cut.length;
  rp.max_output_tokens = 10000;
  auto back = f.exec->read_output(rp);
  REQUIRE(back);
  std::string expected;
  for (int i = 1; i <= 2000; ++i) expected += "line " + std::to_string(i) + "\n";
  CHECK(back->output == expected.substr(cut.offset, cut.length));

  agent::ReadParams tl;
  tl.session_id = r->session;
  tl.tail_lines = 2;
  CHECK(f.exec->read_output(tl)->output == "line 1999\nline 2000\n");

  agent::ReadParams g;
  g.session_id = r->session;
  g.grep = "^line 250$";
  g.context = 1;
  auto hits = f.exec->read_output(g);
  REQUIRE(hits);
  CHECK(hits->output.find("L250@") != std::string::npos);
  CHECK(hits->output.find("L249@") != std::string::npos);
  CHECK(hits->output.find("L251@") != std::string::npos);
}

TEST_CASE("sandbox hooks: an executor record denies even exit 126; the predicate needs a sandboxed kind") {
  AgentFixture f;
  auto log = std::make_shared<policy::DenialLog>();
  log->records.push_back({"landlock", "fs_write", "write /etc/hosts"});
  auto p = cmd("exit 126");
  p.attempt = policy::SandboxAttempt::fake(log);
  auto r = f.exec_cmd(p);
  REQUIRE(r->sandbox_denied);
  CHECK(r->text.find("Sandbox denied: executor: landlock write /etc/hosts") != std::string::npos);

  auto q = cmd("echo 'touch: cannot touch x: Read-only file system'; exit 1");
  q.attempt = policy::SandboxAttempt::fake(std::make_shared<policy::DenialLog>());
  auto h = f.exec_cmd(q);
  REQUIRE(h->sandbox_denied);
  CHECK(h->sandbox_denied->source == policy::DenialSource::kHeuristic);
  auto nope = f.exec_cmd(cmd("echo 'Read-only file system'; exit 1"));  // unsandboxed: never checked
  CHECK(!nope->sandbox_denied);
  auto ok = cmd("echo ./sandbox/x; exit 1");
  ok.attempt = policy::SandboxAttempt::fake(std::make_shared<policy::DenialLog>());
  CHECK(!f.exec_cmd(ok)->sandbox_denied);
}

TEST_CASE("pain points: a grandchild holding the PTY, exec > >(tee), pagers") {
  AgentFixture f;
  auto t0 = std::chrono::steady_clock::now();
  auto g = f.exec_cmd(cmd("sleep 100 & echo hi", true, 10000));
  REQUIRE(g);
  CHECK(since(t0) < 5.0);
  CHECK(g->exit_code == 0);
  CHECK(g->output.find("hi") != std::string::npos);

  auto tee = f.exec_cmd(cmd("exec > >(tee /tmp/uexec-tee-$$.log); echo hi; rm -f /tmp/uexec-tee-$$.log", false, 10000));
  REQUIRE(tee);
  CHECK(tee->exit_code == 0);
  CHECK(tee->output.find("hi") != std::string::npos);

  std::string repo = "/tmp/uexec-pager-" + std::to_string(::getpid());
  auto setup = f.exec_cmd(cmd("rm -rf " + repo + " && git init -q " + repo + " && cd " + repo +
                              " && for i in $(seq 1 100); do git -c user.name=t -c user.email=t@t commit -q "
                              "--allow-empty -m c$i; done && echo ok",
                              false, 30000));
  REQUIRE(setup->output.find("ok") != std::string::npos);
  auto log = f.exec_cmd(cmd("cd " + repo + " && git log --oneline | wc -l && git log | tail -1; rm -rf " + repo, true, 10000));
  REQUIRE(log);
  CHECK(log->exit_code == 0);
  CHECK(log->output.find("(END)") == std::string::npos);
  CHECK(log->output.find("100") != std::string::npos);

  // man prefers MANPAGER over PAGER; the preset sets both.
  if (std::system("man -w ls >/dev/null 2>&1") == 0) {
    auto man = f.exec_cmd(cmd("man ls", true, 10000));
    REQUIRE(man);
    CHECK(man->exit_code == 0);
    CHECK(man->output.find("(END)") == std::string::npos);
    CHECK(man->output.find("ls") != std::string::npos);
  } else {
    MESSAGE("man ls not checked: no man page for ls on this machine");
  }
}

TEST_CASE("a grandchild holding the PTY is reported at the exit and killed when the session closes") {
  AgentFixture f;
  // The kernel hangs up the leader's foreground group when it exits; a job that ignores it
  // (a daemon, `nohup`) is the one that lingers.
  auto g = f.exec_cmd(cmd("trap '' HUP; sleep 9471 & echo hi", true, 10000));
  REQUIRE(g);
  CHECK(g->exit_code == 0);
  CHECK(g->output.find("hi") != std::string::npos);
  CHECK_FALSE(g->output_closed);
  REQUIRE(g->lingering.size() == 1);
  CHECK_FALSE(g->lingering[0].killed);  // (its comm may still be bash: caught between fork and exec)
  CHECK(g->text.find("Lingering processes: 1 still running, to be killed when the session closes (" +
                     g->lingering[0].comm + " pid " + std::to_string(g->lingering[0].pid) + ")") != std::string::npos);
  pid_t pid = g->lingering[0].pid;
  // One close drain later the session is finished and the job is gone.
  REQUIRE(f.run_until([&] { return ::kill(pid, 0) == -1 && errno == ESRCH; }, 10s));
  agent::ReadParams rp;
  rp.session_id = g->session;
  auto back = f.exec->read_output(rp);
  REQUIRE(back);
  CHECK_MESSAGE(back->output_closed, back->text);
  CHECK(back->text.find("Lingering processes: 1 killed (") != std::string::npos);
  CHECK(back->text.find(" pid " + std::to_string(pid) + ")") != std::string::npos);
}

TEST_CASE("a setsid escapee is dead after kill_session, in the cgroup and the tracked tier") {
  std::vector<base::ContainmentMode> modes{base::ContainmentMode::kTracked};
  if (session::Containment(base::ContainmentMode::kCgroup).cgroups()) modes.push_back(base::ContainmentMode::kCgroup);
  for (auto mode : modes) {
    auto cfg = agent_config();
    cfg.containment = mode;
    AgentFixture f(cfg);
    auto r = f.exec_cmd(cmd("setsid -f sleep 9581; echo started; sleep 100", false, 500));
    REQUIRE(r);
    REQUIRE(r->session_id);
    auto rows = f.exec->list_sessions({});
    REQUIRE(rows.rows.size() == 1);
    CHECK(rows.rows[0].containment == (mode == base::ContainmentMode::kCgroup ? "cgroup" : "tracked"));
    std::vector<session::LingeringProcess> live;
    REQUIRE(f.run_until([&] {
      live = f.pm->sessions().front()->live_descendants();
      return std::any_of(live.begin(), live.end(), [](const auto& p) { return p.command == "sleep 9581"; });
    }));
    pid_t escapee = 0;
    for (const auto& p : live)
      if (p.command == "sleep 9581") escapee = p.pid;
    agent::KillParams k;
    k.session_id = r->session_id;
    auto killed = f.kill(k);
    REQUIRE(killed);
    CHECK(killed->exit_code);
    CHECK(f.run_until([&] { return ::kill(escapee, 0) == -1 && errno == ESRCH; }, 10s));
    CHECK(count_zombie_children() == 0);
  }
}

TEST_CASE("streaming: deltas carry the call's output as it arrives, in order, and nothing else") {
  AgentFixture f;
  std::vector<std::string> pieces;
  auto p = cmd("printf 'one\\n'; sleep 0.3; printf 'tw\\303'; sleep 0.3; printf '\\251o\\377\\n'", false, 10000);
  p.on_delta = [&](std::string_view d) { pieces.emplace_back(d); };
  auto r = f.exec_cmd(p);
  REQUIRE(r);
  std::string joined;
  for (const auto& d : pieces) joined += d;
  CHECK(pieces.size() >= 3);
  CHECK(joined == r->output);
  CHECK(joined == "one\ntw\xC3\xA9o\xEF\xBF\xBD\n");
  // A poll of the finished session streams nothing new.
  pieces.clear();
  (void)f.write(input(r->session, "", 300));
  CHECK(pieces.empty());
}

TEST_CASE("the event log: one start and one end per session, the end naming the call that started it") {
  AgentFixture f;
  std::vector<agent::SessionEvent> seen;
  f.exec->on_event = [&](const agent::SessionEvent& e) { seen.push_back(e); };
  auto run = [&](agent::ExecParams p, agent::CallId* cid) {
    p.login = false;
    return f.wait_reply([&](agent::Reply r) { *cid = f.exec->exec_command(std::move(p), std::move(r)); });
  };
  agent::CallId quick_call = 0, slow_call = 0;
  auto quick = run(cmd("echo quick"), &quick_call);
  REQUIRE(quick);
  auto slow = run(cmd("sleep 0.5; exit 4", false, 250), &slow_call);
  REQUIRE(slow);
  REQUIRE(slow->session_id);  // the call returned; the session ends during a later poll
  auto poll = f.write(input(*slow->session_id, "", 5000));
  REQUIRE(poll);
  CHECK(poll->exit_code == 4);
  (void)f.write(input(*slow->session_id, "", 300));  // an empty poll on a finished session
  using K = agent::SessionEvent::Kind;
  REQUIRE(seen.size() == 4);
  CHECK((seen[0].kind == K::kStart && seen[0].session == quick->session && seen[0].call == quick_call));
  CHECK((seen[1].kind == K::kEnd && seen[1].session == quick->session && seen[1].call == quick_call &&
         seen[1].exit_code == 0));
  CHECK((seen[2].kind == K::kStart && seen[2].session == slow->session && seen[2].call == slow_call &&
         seen[2].cmd == "sleep 0.5; exit 4"));
  CHECK((seen[3].kind == K::kEnd && seen[3].session == slow->session && seen[3].call == slow_call &&
         seen[3].exit_code == 4));
  CHECK(f.exec->events().size() == 4);
  CHECK(quick_call != slow_call);
}

TEST_CASE("4 KiB+ of output from a fast exit arrives whole, tty and pipes, 1000 runs") {
  AgentFixture f;
  int bad = 0;
  for (int i = 0; i < 1000; ++i) {
    bool tty = i % 2 == 0;
    auto r = f.exec_cmd(cmd("head -c 65536 /dev/zero | base64 -w 76", tty, 10000));
    REQUIRE(r);
    agent::ReadParams rp;
    rp.session_id = r->session;
    rp.max_output_tokens = 0;
    auto all = f.exec->read_output(rp);
    // 87384 base64 chars in lines of 76: 1150 newlines; a tty turns each into \r\n.
    std::uint64_t want = 87384 + 1150 + (tty ? 1150 : 0);
    if (r->exit_code != 0 || !all || all->range_length != want) ++bad;
  }
  CHECK(bad == 0);
}

TEST_CASE("the agent environment reaches the command") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("echo $NO_COLOR $TERM $PAGER $UEXEC_SESSION_ID $LC_ALL"));
  CHECK(r->output == "1 dumb cat " + std::to_string(r->session) + " C.UTF-8\n");
}

TEST_CASE("errors: a blank command, a missing workdir, a login shell when disabled, an unknown key") {
  base::Config cfg = agent_config();
  cfg.agent.allow_login_shell = false;
  AgentFixture f(cfg);
  auto blank = f.exec_cmd(cmd("   "));
  CHECK(blank.error().context == "exec_command failed: missing command line");
  auto wd = cmd("pwd");
  wd.workdir = "/definitely/missing";
  CHECK(f.exec_cmd(wd).error().context.find("is not an existing directory") != std::string::npos);
  auto rel = cmd("pwd");
  rel.workdir = ".";
  CHECK(f.exec_cmd(rel)->output == "/tmp\n");
  auto login = cmd("true");
  login.login = true;
  CHECK(f.exec_cmd(login).error().context ==
        "exec_command failed for `true`: login shell is disabled by config; omit `login` or set it to false.");
  auto r = f.exec_cmd(cmd("sleep 5", false, 250));
  WriteParams k;
  k.session_id = r->session_id;
  k.keys = {"hyper-x"};
  CHECK(f.write(k).error().context.find("unknown key \"hyper-x\"") != std::string::npos);
}

TEST_CASE("max_output_tokens above the cap is clamped on every tool; 0 leaves the marker alone") {
  AgentFixture f;
  auto p = cmd("head -c 100000 /dev/zero | tr '\\0' a");
  p.max_output_tokens = 70000;
  auto r = f.exec_cmd(p);
  CHECK(r->text.find("Warning: truncated output (original token count: 25000)") != std::string::npos);
  CHECK(r->output.size() < 40000 + 200);  // the 10000-token cap, not 70000
  agent::ReadParams rp;
  rp.session_id = r->session;
  rp.max_output_tokens = 70000;
  CHECK(f.exec->read_output(rp)->output.size() < 40000 + 200);
  rp.max_output_tokens = 0;
  CHECK(f.exec->read_output(rp)->output ==
        "Warning: truncated output (original token count: 25000)\n…25000 tokens truncated (read_output session_id=" +
            std::to_string(r->session) + " offset=0 length=100000)…");
  auto s = f.exec_cmd(cmd("cat", true, 500));
  WriteParams w = input(*s->session_id, std::string(200, 'b') + "\n");
  w.max_output_tokens = 70000;
  CHECK(f.write(w));
}

TEST_CASE("concurrent write_stdin calls run in order with disjoint output; a cancelled call consumes nothing") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("cat", false, 250));
  (void)r;
  auto p = cmd("cat", false, 250);
  p.pipe_stdin = true;
  auto c = f.exec_cmd(p);
  long id = *c->session_id;
  std::vector<std::string> outs(3);
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    WriteParams w = input(id, "w" + std::to_string(i) + "\n", 300);
    f.exec->write_stdin(w, [&, i](base::Result<Response> x) {
      outs[i] = x ? x->output : "error";
      ++done;
    });
  }
  REQUIRE(f.run_until([&] { return done == 3; }));
  CHECK(outs[0] == "w0\n");
  CHECK(outs[1] == "w1\n");
  CHECK(outs[2] == "w2\n");
  // A cancelled poll consumes nothing: the next call still gets the output.
  WriteParams w = input(id, "late\n", 2000);
  agent::CallId cid = f.exec->write_stdin(w, [&](base::Result<Response>) { FAIL("a cancelled call replied"); });
  f.run_for(std::chrono::milliseconds{50});
  f.exec->cancel(cid);
  auto next = f.write(input(id, "", 0));
  CHECK(next->output == "late\n");
}

TEST_CASE("the post-write settle: conditions wait for it, so idle sees the program's reaction") {
  AgentFixture f;
  auto p = cmd("while read l; do echo got; sleep 0.2; echo done; done", false, 250);
  p.pipe_stdin = true;
  auto r = f.exec_cmd(p);
  long id = *r->session_id;
  WriteParams w = input(id, "x\n", 5000);
  agent::Until idle;
  idle.idle = std::chrono::milliseconds{150};
  w.until = idle;
  auto a = f.write(w);
  CHECK(a->output.find("got") != std::string::npos);  // idle 150 counts from the settle end
  (void)f.write(input(id, "", 0));                          // drain "done"

  base::Config cfg = agent_config();
  cfg.agent.post_write_settle = std::chrono::milliseconds{0};
  AgentFixture g(cfg);
  auto r2 = g.exec_cmd(p);
  WriteParams w2 = input(*r2->session_id, "x\n", 5000);
  agent::Until idle0;
  idle0.idle = std::chrono::milliseconds{50};
  w2.until = idle0;
  auto b = g.write(w2);
  CHECK(b->fired == "idle");
  CHECK(b->output.find("done") == std::string::npos);  // returned before the program finished
}

TEST_CASE("timeouts and outside signals end sessions with the right attribution") {
  AgentFixture f;
  auto p = cmd("sleep 100", false, 250);
  p.timeout_ms = 1000;
  auto r = f.exec_cmd(p);
  auto t0 = std::chrono::steady_clock::now();
  auto end = f.write(input(*r->session_id, "", 10000));
  CHECK(since(t0) < 5.0);
  CHECK(end->killed_by == "a lifetime timeout of 1000 ms");
  CHECK(end->exit_code == 128 + SIGTERM);

  auto q = cmd("sleep 100", false, 250);
  q.idle_timeout_ms = 1000;
  auto i = f.exec_cmd(q);
  auto iend = f.write(input(*i->session_id, "", 10000));
  CHECK(iend->killed_by == "an idle timeout of 1000 ms");

  auto o = f.exec_cmd(cmd("echo $$; exec sleep 100", false, 250));
  pid_t pid = std::atoi(o->output.c_str());
  REQUIRE(pid > 0);
  ::kill(pid, SIGTERM);
  auto oend = f.write(input(*o->session_id, "", 10000));
  CHECK(oend->text.find("Signal: SIGTERM (sent by a signal not sent by uexec)") != std::string::npos);
}

TEST_CASE("kill_session escalates to SIGKILL for a TERM-ignoring process; a kill during exec_command's wait") {
  AgentFixture f;
  auto r = f.exec_cmd(cmd("trap '' TERM HUP; echo ready; while :; do sleep 0.05; done", false, 500));
  agent::KillParams k;
  k.session_id = r->session_id;
  k.grace_ms = 300;
  auto killed = f.kill(k);
  CHECK(killed->exit_code == 137);
  CHECK(killed->text.find("Signal: SIGKILL (sent by kill_session)") != std::string::npos);
  // Idempotent: killing it again answers with its status.
  CHECK(f.kill(k));

  std::optional<base::Result<Response>> first;
  f.exec->exec_command(cmd("sleep 100", false, 30000), [&](base::Result<Response> x) { first.emplace(std::move(x)); });
  f.run_for(std::chrono::milliseconds{300});
  REQUIRE(!first);
  agent::KillParams k2;
  k2.session_id = 1001;  // deterministic ids: the second session
  (void)f.kill(k2);
  REQUIRE(f.run_until([&] { return first.has_value(); }, 5s));
  CHECK((*first)->exit_code == 128 + SIGTERM);
  CHECK(!(*first)->session_id);
}

TEST_CASE("a denied session's id answers `denied by the sandbox`") {
  AgentFixture f;
  auto log = std::make_shared<policy::DenialLog>();
  log->records.push_back({"seccomp", "network", "socket(AF_INET)"});
  auto p = cmd("exit 1");
  p.attempt = policy::SandboxAttempt::fake(log);
  auto r = f.exec_cmd(p);
  auto w = f.write(input(r->session, "x"));
  CHECK(w.error().context.find("(denied by the sandbox (executor: seccomp socket(AF_INET)) at ") != std::string::npos);
}

TEST_CASE("ids are random in [1000, 100000) and not reused while tombstoned") {
  base::Config cfg;
  cfg.close_drain = std::chrono::milliseconds{1000};
  AgentFixture f(cfg);
  std::set<long> seen;
  for (int i = 0; i < 20; ++i) {
    auto r = f.exec_cmd(cmd("true"));
    CHECK(r->session >= 1000);
    CHECK(r->session < 100000);
    seen.insert(r->session);
  }
  CHECK(seen.size() == 20);
}

TEST_CASE("arrow keys use the SS3 form after the program enables application cursor keys") {
  AgentFixture f;
  // head -c 3 takes exactly one arrow key's bytes, then od shows them.
  auto r = f.exec_cmd(cmd("stty raw -echo; printf '\\033[?1h'; head -c 3 | od -An -c", true, 500));
  REQUIRE(r->session_id);
  WriteParams up;
  up.session_id = r->session_id;
  up.keys = {"up"};
  up.yield_time_ms = 3000;
  auto out = f.write(up);
  // od shows ESC as 033: SS3 is "033   O   A", CSI would be "033   [   A".
  INFO(out->output);
  CHECK(out->output.find("O   A") != std::string::npos);
  CHECK(out->output.find("[   A") == std::string::npos);
}
