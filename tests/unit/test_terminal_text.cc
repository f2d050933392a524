// base::terminal_text: what the CLI prints of strings others chose (terminal_text.h).
#include <doctest/doctest.h>

#include <string>

#include "base/terminal_text.h"

using uexec::base::terminal_text;

TEST_CASE("terminal_text: printable text, other scripts and emoji pass as they are") {
  CHECK(terminal_text("ls -la /tmp/a b") == "ls -la /tmp/a b");
  CHECK(terminal_text("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82") == "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82");
  CHECK(terminal_text("") == "");
  CHECK(terminal_text("a\\b") == "a\\b");
}

TEST_CASE("terminal_text: control characters are shown, never sent") {
  // An approval prompt rewritten by the command it asks about: up a line, erase, another text.
  CHECK(terminal_text("rm -rf ~\x1b[1A\x1b[2Kls") == "rm -rf ~\\e[1A\\e[2Kls");
  CHECK(terminal_text("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(terminal_text(std::string("x\0y", 3)) == "x\\x00y");
  CHECK(terminal_text("\x07\x7f") == "\\x07\\x7f");
  CHECK(terminal_text("\xc2\x9b" "31m") == "\\u{9b}31m");  // CSI as a C1 control in UTF-8
  CHECK(terminal_text("\xc2\x85") == "\\u{85}");
  CHECK(terminal_text("\xc2\xa0") == "\xc2\xa0");  // U+00A0 is not a control
}

TEST_CASE("terminal_text: bidirectional controls that reorder the line are shown") {
  CHECK(terminal_text("a\xe2\x80\xae" "cba") == "a\\u{202e}cba");  // RIGHT-TO-LEFT OVERRIDE
  CHECK(terminal_text("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u{2066}x\\u{2069}");
  CHECK(terminal_text("\xe2\x80\x8f") == "\\u{200f}");
  CHECK(terminal_text("\xd8\x9c") == "\\u{61c}");
}

TEST_CASE("terminal_text: bytes that are not UTF-8 are shown one by one") {
  CHECK(terminal_text("\xff") == "\\xff");
  CHECK(terminal_text("a\xc3") == "a\\xc3");             // cut short at the end
  CHECK(terminal_text("\xc3(") == "\\xc3(");             // cut short by ASCII
  CHECK(terminal_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(terminal_text("\xc0\xaf") == "\\xc0\\xaf");       // overlong
  CHECK(terminal_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}
