// Unit tests for the pure agent pieces: UTF-8 decoding and cutting, the body and envelope,
// named keys, the environment preset, and the denial predicate.
#include <doctest/doctest.h>
#include <signal.h>

#include <cstdint>
#include <regex>
#include <span>

#include "agent/agent_env.h"
#include "agent/deltas.h"
#include "agent/envelope.h"
#include "agent/keys.h"
#include "agent/output_modes.h"
#include "agent/probes.h"
#include "policy/denial.h"
#include "session/output_ring.h"
#include "session/utf8_cut.h"

using namespace uexec;
using namespace uexec::agent;
using session::incomplete_tail;
using session::lossy_decode;

namespace {
// Mixed 1-4 byte characters, a combining accent and a ZWJ family emoji.
const std::string kMixed = "a\xC3\xA9" "e\xCC\x81" "\xE2\x82\xAC" "\xF0\x9F\x98\x80" "b"
                           "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7" "z";
const std::string kFamily = "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7";

bool valid_utf8(const std::string& s) { return lossy_decode(s) == s; }
}  // namespace

TEST_CASE("lossy decoding: each maximal invalid subpart becomes one U+FFFD") {
  CHECK(lossy_decode("plain") == "plain");
  CHECK(lossy_decode("\xFF") == "\xEF\xBF\xBD");
  CHECK(lossy_decode("a\xE2\x82" "b") == "a\xEF\xBF\xBD" "b");          // truncated 3-byte: one U+FFFD
  CHECK(lossy_decode("\xE0\x80\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: three
  CHECK(lossy_decode("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate: three
  CHECK(lossy_decode("\xF0\x9F\x98") == "\xEF\xBF\xBD");
  CHECK(lossy_decode(kMixed) == kMixed);
}

TEST_CASE("a trailing incomplete sequence is held back, at every split of mixed text") {
  CHECK(incomplete_tail("ab") == 0);
  CHECK(incomplete_tail("a\xE2") == 1);
  CHECK(incomplete_tail("a\xE2\x82") == 2);
  CHECK(incomplete_tail("a\xF0\x9F\x98") == 3);
  CHECK(incomplete_tail("a\xFF") == 0);  // invalid, not incomplete
  for (std::size_t cut = 0; cut <= kMixed.size(); ++cut) {
    CAPTURE(cut);
    std::string first = kMixed.substr(0, cut);
    std::size_t held = incomplete_tail(first);
    std::string shown = lossy_decode(first.substr(0, first.size() - held));
    std::string rest = lossy_decode(first.substr(first.size() - held) + kMixed.substr(cut));
    CHECK(shown + rest == lossy_decode(kMixed));
  }
}

TEST_CASE("truncation at every budget gives valid UTF-8 and never splits a grapheme cluster") {
  std::string text;
  for (int i = 0; i < 8; ++i) text += kMixed;
  for (std::size_t budget = 0; budget <= text.size() + 1; ++budget) {
    CAPTURE(budget);
    Collected c;
    c.start = 100;
    c.end = 100 + text.size();
    c.raw = text;
    Body b = render_body(c, budget, 4242, true);
    CHECK(valid_utf8(b.text));
    if (budget >= text.size()) {
      CHECK(!b.truncated);
      CHECK(b.text == text);
      continue;
    }
    CHECK(b.truncated);
    // The family emoji appears only whole: every ZWJ is between two of its members.
    std::string t = b.text;
    std::size_t zwj_pos = 0;
    while ((zwj_pos = t.find("\xE2\x80\x8D", zwj_pos)) != std::string::npos) {
      CHECK(zwj_pos >= 4);
      CHECK(t.compare(zwj_pos - 4, 2, "\xF0\x9F") == 0);
      zwj_pos += 3;
    }
    // The combining accent never starts a piece.
    CHECK(t.find("\n\xCC\x81") == std::string::npos);
    REQUIRE(b.omitted.size() >= 1);
    CHECK(b.omitted[0].kind == "truncated");
    CHECK(b.omitted[0].offset >= 100);
    CHECK(b.omitted[0].offset + b.omitted[0].length <= c.end);
  }
}

TEST_CASE("the truncation marker names the raw range and the token count") {
  Collected c;
  c.start = 0;
  c.raw = std::string(100, 'x');
  c.end = 100;
  Body b = render_body(c, 40, 7, true);
  CHECK(b.text == "Warning: truncated output (original token count: 25)\n" + std::string(20, 'x') +
                      "\n…15 tokens truncated (read_output session_id=7 offset=20 length=60)…\n" + std::string(20, 'x'));
  Body bare = render_body(c, 40, 7, false);
  CHECK(bare.text.find("\n…15 tokens truncated…\n") != std::string::npos);
  Body zero = render_body(c, 0, 7, true);
  CHECK(zero.text ==
        "Warning: truncated output (original token count: 25)\n…25 tokens truncated (read_output session_id=7 offset=0 "
        "length=100)…");
}

TEST_CASE("evicted bytes are rendered as an explicit omission, never dropped silently") {
  Collected c;
  c.start = 0;
  c.raw = "headtail";
  c.gap_at = 4;
  c.gap = 1000;
  c.end = 1008;
  Body b = render_body(c, 100, 1, true);
  CHECK(b.text == "head\n... 1000 bytes omitted ...\ntail");
  CHECK(b.original_tokens == 252);
  REQUIRE(b.omitted.size() == 1);
  CHECK(b.omitted[0].kind == "evicted");
  CHECK(b.omitted[0].offset == 4);
}

TEST_CASE("evicted bytes inside a truncation cut are still reported as evicted") {
  Collected c;
  c.start = 0;
  c.raw = std::string(40, 'h') + std::string(40, 't');
  c.gap_at = 40;
  c.gap = 100000;
  c.end = 80 + 100000;
  Body b = render_body(c, 20, 7, true);  // the cut swallows the evicted block
  REQUIRE(b.omitted.size() == 2);
  CHECK(b.omitted[0].kind == "truncated");
  CHECK(b.omitted[1].kind == "evicted");
  CHECK(b.omitted[1].offset == 40);
  CHECK(b.omitted[1].length == 100000);
}

TEST_CASE("a read_output range cut from collected output keeps only the evicted span it covers") {
  // Offsets 100-104 "head", 104-1104 evicted, 1104-1108 "tail".
  auto make = [] {
    Collected c;
    c.start = 100;
    c.raw = "headtail";
    c.gap_at = 4;
    c.gap = 1000;
    c.end = 1108;
    return c;
  };
  Collected c = make();
  trim_collected(c, 104);  // ends where the gap begins: the head only, no gap
  CHECK(c.raw == "head");
  CHECK(c.gap == 0);
  CHECK(c.end == 104);
  CHECK(render_body(c, 100, 1, true).text == "head");
  CHECK(render_body(c, 100, 1, true).omitted.empty());
  c = make();
  trim_collected(c, 102);
  CHECK(c.raw == "he");
  CHECK(c.gap == 0);
  c = make();
  trim_collected(c, 604);  // ends inside the gap: the head, then the 500 evicted bytes it covers
  CHECK(c.raw == "head");
  CHECK(c.gap == 500);
  CHECK(c.end == 604);
  CHECK(render_body(c, 100, 1, true).text == "head\n... 500 bytes omitted ...\n");
  c = make();
  trim_collected(c, 1106);  // past the gap: two tail bytes
  CHECK(c.raw == "headta");
  CHECK(c.gap == 1000);
  c = make();
  trim_collected(c, 5000);  // beyond the end: unchanged
  CHECK(c.raw == "headtail");
  CHECK(c.end == 1108);
}

TEST_CASE("from_offset over everything collected answers as collect() from that offset") {
  // read_output collects a ring (or a journal) once and slices it; every start, in the head, in
  // the evicted span, in the tail, before the first retained byte and past the end, must give
  // what collect(ring, from) gives.
  for (std::size_t capacity : {64u, 1u, 4096u}) {
    session::OutputRing ring(capacity);
    std::uint64_t seq = 1;
    std::string text;
    for (int i = 0; i < 60; ++i) text += std::to_string(i) + "\n";
    for (std::size_t at = 0; at < text.size(); at += 7) {
      std::string piece = text.substr(at, 7);
      ring.append(seq++, session::Stream::kPty, std::as_bytes(std::span<const char>(piece.data(), piece.size())));
    }
    const std::uint64_t first = ring.head_end() < ring.tail_start() && ring.head_end() == 0 ? ring.tail_start() : 0;
    const Collected all = collect(ring, first, false);
    for (std::uint64_t from = 0; from <= ring.total() + 3; ++from) {
      CAPTURE(capacity);
      CAPTURE(from);
      const Collected want = collect(ring, from, false);
      const Collected got = from_offset(all, from);
      CHECK(got.start == want.start);
      CHECK(got.end == want.end);
      CHECK(got.raw == want.raw);
      CHECK(got.gap == want.gap);
      if (want.gap > 0) CHECK(got.gap_at == want.gap_at);
    }
  }
}

TEST_CASE("the envelope: chunk id, wall time with 4 decimals, status, token count") {
  Envelope e;
  e.chunk_id = new_chunk_id();
  CHECK(std::regex_match(e.chunk_id, std::regex("[0-9a-f]{6}")));
  e.chunk_id = "3f09ac";
  e.wall_time_seconds = 0.25314;
  e.exit_code = 0;
  e.original_tokens = 1;
  e.body = "hi\n";
  CHECK(render_envelope(e) == "Chunk ID: 3f09ac\nWall time: 0.2531 seconds\nProcess exited with code 0\n"
                              "Original token count: 1\nOutput:\nhi\n");
  e.exit_code.reset();
  e.session_id = 48213;
  e.extra = {"Returned early: idle 150 ms"};
  CHECK(render_envelope(e) == "Chunk ID: 3f09ac\nWall time: 0.2531 seconds\nProcess running with session ID 48213\n"
                              "Returned early: idle 150 ms\nOriginal token count: 1\nOutput:\nhi\n");
}

TEST_CASE("named keys") {
  CHECK(*key_bytes("enter", true, false) == "\r");
  CHECK(*key_bytes("enter", false, false) == "\n");
  CHECK(*key_bytes("ctrl-c", true, false) == "\x03");
  CHECK(*key_bytes("C-c", true, false) == "\x03");
  CHECK(*key_bytes("^C", true, false) == "\x03");
  CHECK(*key_bytes("CTRL-D", true, false) == "\x04");
  CHECK(*key_bytes("up", true, false) == "\x1b[A");
  CHECK(*key_bytes("up", true, true) == "\x1bOA");
  CHECK(*key_bytes("pageup", true, false) == "\x1b[5~");
  CHECK(*key_bytes("ctrl-\\", true, false) == "\x1c");
  CHECK(!key_bytes("hyper-x", true, false));
  CHECK(canonical_key("Esc") == "escape");
}

TEST_CASE("the agent preset: exactly its 20 pairs plus UEXEC_SESSION_ID, overriding, keeping the rest") {
  std::vector<std::string> base = {"PATH=/opt/bin:/usr/bin", "TERM=xterm", "HOME=/root", "MY_API_KEY=s3cret",
                                   "GITHUB_TOKEN=x", "aws_secret=y", "KEEP=1"};
  auto env = build_agent_env(base, EnvPolicy{}, 1234);
  CHECK(agent_preset().size() == 20);
  CHECK(env.size() == 3 + 20 + 1);  // PATH, HOME, KEEP + preset + id
  CHECK(*env_get(env, "PATH") == "/opt/bin:/usr/bin");
  CHECK(*env_get(env, "TERM") == "dumb");
  CHECK(*env_get(env, "NO_COLOR") == "1");
  CHECK(*env_get(env, "COLORTERM") == "");
  CHECK(*env_get(env, "UEXEC_SESSION_ID") == "1234");
  CHECK(!env_get(env, "MY_API_KEY"));
  CHECK(!env_get(env, "GITHUB_TOKEN"));
  CHECK(!env_get(env, "aws_secret"));

  EnvPolicy core;
  core.inherit = EnvPolicy::Inherit::kCore;
  core.set = {{"EXTRA", "v"}};
  auto env2 = build_agent_env(base, core, 1);
  CHECK(!env_get(env2, "KEEP"));
  CHECK(*env_get(env2, "HOME") == "/root");
  CHECK(*env_get(env2, "EXTRA") == "v");

  EnvPolicy none;
  none.inherit = EnvPolicy::Inherit::kNone;
  auto env3 = build_agent_env(base, none, 1);
  CHECK(*env_get(env3, "PATH") == "/usr/local/bin:/usr/bin:/bin");

  EnvPolicy filtered;
  filtered.ignore_default_excludes = true;
  filtered.exclude = {"KE*"};
  filtered.include_only = {"MY_*", "PATH"};
  auto env4 = build_agent_env(base, filtered, 1);
  CHECK(*env_get(env4, "MY_API_KEY") == "s3cret");
  CHECK(!env_get(env4, "HOME"));
}

TEST_CASE("denial predicate: quick rejects, SIGSYS, whole words, executor records") {
  using policy::classify_exit;
  pty::ExitStatus ok{0, 0, false}, one{1, 0, false}, two{2, 0, false}, c126{126, 0, false}, c127{127, 0, false};
  CHECK(!classify_exit(ok, nullptr, "permission denied", false, false));
  CHECK(!classify_exit(two, nullptr, "permission denied", false, false));
  CHECK(!classify_exit(c126, nullptr, "permission denied", false, false));
  CHECK(!classify_exit(c127, nullptr, "operation not permitted", false, false));
  auto rofs = classify_exit(one, nullptr, "touch: cannot touch 'x': Read-only file system", false, false);
  REQUIRE(rofs);
  CHECK(rofs->source == policy::DenialSource::kHeuristic);
  CHECK(rofs->describe() == "heuristic: output contains \"read-only file system\"");
  CHECK(!classify_exit(one, nullptr, "./src/sandbox/main.c\n./sandbox-exec\n", false, false));
  CHECK(classify_exit(one, nullptr, "blocked by the sandbox: write", false, false));
  pty::ExitStatus sys{0, SIGSYS, false};
  CHECK(classify_exit(sys, nullptr, "", true, false));
  CHECK(!classify_exit(sys, nullptr, "", false, false));
  policy::DenialLog log;
  log.records.push_back({"landlock", "fs_write", "write /etc/hosts"});
  auto rec = classify_exit(c126, &log, "", false, false);
  REQUIRE(rec);
  CHECK(rec->source == policy::DenialSource::kExecutor);
  CHECK(rec->describe() == "executor: landlock write /etc/hosts");
  CHECK(!classify_exit(ok, &log, "", false, false));
  // A listed filesystem write (--log-denials) is not evidence: it never becomes the verdict,
  // and an evidence record after it still does.
  policy::DenialLog listed;
  listed.records.push_back({"filesystem", "fs_write", "openat /etc/hosts", /*evidence=*/false});
  CHECK(!classify_exit(one, &listed, "", false, false));
  CHECK(classify_exit(one, &listed, "Permission denied", false, false)->source == policy::DenialSource::kHeuristic);
  listed.records.push_back({"seccomp", "network", "socket(AF_INET)"});
  CHECK(classify_exit(one, &listed, "", false, false)->describe() == "executor: seccomp socket(AF_INET)");
  CHECK(classify_exit(one, nullptr, "device or resource busy", false, true));
  CHECK(!classify_exit(one, nullptr, "device or resource busy", false, false));
}

TEST_CASE("ANSI stripping for until.regex") {
  CHECK(strip_ansi("\x1b[1;31mred\x1b[0m\r") == "red");
  CHECK(strip_ansi("\x1b]0;title\x07text") == "text");
  CHECK(strip_ansi("\x1b]2;t\x1b\\x") == "x");
}

namespace {

std::vector<std::string> split_deltas(std::vector<std::string_view> feeds, std::size_t max_bytes,
                                      std::size_t max_pieces = 10000, bool close = true) {
  DeltaSplitter d(max_bytes, max_pieces);
  std::vector<std::string> out;
  auto emit = [&](std::string_view p) { out.emplace_back(p); };
  for (auto f : feeds) d.feed(f, emit);
  if (close) d.close(emit);
  return out;
}

}  // namespace

TEST_CASE("deltas: ASCII pieces stay within 8192 bytes; a 3-byte limit with 2-byte characters emits one each") {
  std::string a(20000, 'a');
  auto p = split_deltas({a}, 8192);
  REQUIRE(p.size() == 3);
  CHECK(p[0].size() == 8192);
  CHECK(p[1].size() == 8192);
  CHECK(p[2].size() == 20000 - 2 * 8192);
  CHECK(split_deltas({"\xC3\xA9\xC3\xA9\xC3\xA9"}, 3) == std::vector<std::string>{"\xC3\xA9", "\xC3\xA9", "\xC3\xA9"});
  // One code point always fits, whatever the limit.
  CHECK(split_deltas({"\xE2\x82\xAC"}, 1) == std::vector<std::string>{"\xE2\x82\xAC"});
}

TEST_CASE("deltas: an invalid subpart goes alone as U+FFFD, in order; an incomplete tail waits, or closes as U+FFFD") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(split_deltas({"\xFF" "abc"}, 8192) == std::vector<std::string>{fffd, "abc"});
  CHECK(split_deltas({"ab\xFF" "cd"}, 8192) == std::vector<std::string>{"ab", fffd, "cd"});
  CHECK(split_deltas({"ab\xE2\x82"}, 8192, 10000, false) == std::vector<std::string>{"ab"});
  CHECK(split_deltas({"ab\xE2\x82", "\xAC!"}, 8192) == std::vector<std::string>{"ab", "\xE2\x82\xAC!"});
  CHECK(split_deltas({"ab\xE2\x82"}, 8192) == std::vector<std::string>{"ab", fffd});
  CHECK(split_deltas({"\xE2\x82" "x"}, 8192) == std::vector<std::string>{fffd, "x"});  // one maximal subpart
}

TEST_CASE("deltas: 1 MiB of 0xFF is one piece per byte, capped at 10000 pieces per call") {
  std::string ff(1 << 20, '\xFF');
  CHECK(split_deltas({ff}, 8192).size() == 10000);
  DeltaSplitter d(8192, SIZE_MAX);
  std::size_t n = 0;
  d.feed(ff, [&](std::string_view p) { n += p == "\xEF\xBF\xBD"; });
  CHECK(n == ff.size());
}

TEST_CASE("deltas: a split at every byte offset decodes exactly like one chunk") {
  // 1-4 byte characters, a ZWJ emoji sequence, an invalid byte.
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80 \xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB\xFFz";
  const std::string whole = lossy_decode(text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    for (std::size_t max : {std::size_t{3}, std::size_t{8192}}) {
      auto p = split_deltas({std::string_view(text).substr(0, cut), std::string_view(text).substr(cut)}, max);
      std::string joined;
      for (const auto& piece : p) {
        CHECK(valid_utf8(piece));
        CHECK((piece.size() <= max || lossy_decode(piece).size() == piece.size()));
        joined += piece;
      }
      CHECK_MESSAGE(joined == whole, "cut at " << cut << ", max " << max);
    }
  }
}

TEST_CASE("OutputModes: DECCKM and the alternate screen, in order, across chunk edges, reset by RIS") {
  session::OutputRing ring(1 << 20);
  std::uint64_t seq = 1;
  OutputModes m;
  auto feed = [&](const std::string& text) {
    session::Offset from = ring.total();
    ring.append(seq++, session::Stream::kPty, std::as_bytes(std::span<const char>(text.data(), text.size())));
    m.scan(ring, from);
  };
  feed("plain output");
  CHECK_FALSE(m.application());
  CHECK_FALSE(m.alternate_screen());
  feed("top: \x1b[?10");  // ESC [ ? 1049 h split across two chunks
  feed("49h\x1b[?1h table");
  CHECK(m.alternate_screen());
  CHECK(m.application());
  feed("\x1b[?1049l\x1b[?1049h\x1b[?1l");  // the last one wins
  CHECK(m.alternate_screen());
  CHECK_FALSE(m.application());
  feed("\x1b[?47l");
  CHECK_FALSE(m.alternate_screen());
  feed("\x1b[?1047h\x1b[?1h\x1b" "c");  // RIS resets both
  CHECK_FALSE(m.alternate_screen());
  CHECK_FALSE(m.application());
  feed("\x1b[?2004h\x1b[?12h");  // other modes are not these
  CHECK_FALSE(m.alternate_screen());
  CHECK_FALSE(m.application());
}
