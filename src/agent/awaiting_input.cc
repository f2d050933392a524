#include "agent/awaiting_input.h"

#include <sys/stat.h>
#include <unistd.h>

#include <regex>

#include "agent/output_modes.h"
#include "agent/probes.h"
#include "pty/tty_state.h"
#include "session/session.h"
#include "session/utf8_cut.h"

namespace uexec::agent {

namespace {

const std::regex& hint_password() {
  static const std::regex re("pass(word|phrase)[^\\n]*:\\s*$", std::regex::icase | std::regex::ECMAScript);
  return re;
}

const std::regex& hint_yes_no() {
  static const std::regex re("\\[[yY]/[nN]\\]\\s*$|\\([yY]es/[nN]o[^)]*\\)\\??\\s*$|ok to proceed\\?.*$|^>>> $",
                             std::regex::ECMAScript | std::regex::icase);
  return re;
}

}  // namespace

std::string last_line(std::string_view raw, std::size_t max) {
  std::string t = strip_ansi(raw);
  while (!t.empty() && (t.back() == '\n')) t.pop_back();
  auto nl = t.rfind('\n');
  std::string line = nl == std::string::npos ? t : t.substr(nl + 1);
  if (line.size() > max) line = line.substr(line.size() - max);
  return session::lossy_decode(line);
}

bool InputWatch::saw_output(std::uint64_t total, Clock::time_point now, std::uint64_t* before) {
  if (total == seen_total_) return false;
  *before = seen_total_;
  seen_total_ = total;
  last_output_ = now;
  reported_ = false;
  return true;
}

void InputWatch::saw_input(Clock::time_point now) {
  last_input_ = now;
  reported_ = false;
}

std::optional<AwaitingInput> InputWatch::probe(session::Session& s, Clock::time_point now,
                                               std::chrono::milliseconds quiet) {
  auto* p = s.process();
  if (!p || s.verdict() || s.finished()) return std::nullopt;
  if (now - last_output_ < quiet) return std::nullopt;
  const auto& ring = s.output();
  session::Offset from = ring.total() > 4096 ? ring.total() - 4096 : 0;
  std::string prompt = last_line(ring.read_from(from, 4096).text(), 120);
  if (s.tty()) {
    int master = p->master_fd();
    if (master >= 0) {
      if (slave_ == 0) slave_ = pty::slave_rdev(master);
      pid_t fg = ::tcgetpgrp(master);
      if (fg > 0 && pty::group_reading_tty(fg, slave_)) {
        auto modes = pty::tty_modes(master);
        // A full-screen program reading keys: its last line is a piece of its screen.
        if (modes && !modes->icanon && modes_ && modes_->alternate_screen()) return AwaitingInput{"screen", "kernel", ""};
        std::string kind = "line";
        if (modes && !modes->icanon) kind = "raw";
        else if (modes && !modes->echo) kind = "password";
        return AwaitingInput{kind, "kernel", prompt};
      }
    }
  } else if (int fd = p->stdin_pipe_fd(); fd >= 0) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && pty::group_reading_pipe(p->pid(), st.st_ino))
      return AwaitingInput{"pipe", "kernel", prompt};
  }
  // No kernel evidence (event-loop programs): prompt patterns on the last line.
  if (std::regex_search(prompt, hint_password())) return AwaitingInput{"password", "hint", prompt};
  if (!prompt.empty() && std::regex_search(prompt, hint_yes_no())) return AwaitingInput{"line", "hint", prompt};
  return std::nullopt;
}

}  // namespace uexec::agent
