// terminal_text.h: text that others chose, made safe to print on a person's terminal.
//
// The CLI prints strings it did not write: a denial record's path (named by the sandboxed
// program), a process's name and command line (set by whichever client started it), a
// journal's metadata. Printed as they are, their control characters reach the terminal: an
// escape sequence can move the cursor, rewrite what is above (an approval prompt showing
// another command than the one asked for), set the title, or, on some terminals, answer
// back into the input. terminal_text() shows such characters instead of sending them:
//   - C0 controls and DEL as \n, \r, \t, \e or \xNN; C1 controls (U+0080-U+009F) as \u{NN};
//   - bytes that are not well-formed UTF-8 as \xNN, one each;
//   - the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069),
//     which reorder what follows them on the screen, as \u{NNNN}.
// Everything else passes as it is, other scripts and emoji included. The result is for
// showing only: it is not an encoding that reads back (a backslash stays one backslash).
// Pure; any thread.
#pragma once

#include <string>
#include <string_view>

namespace uexec::base {

// `untrusted` with its control, bidirectional-control and ill-formed bytes shown as escapes.
std::string terminal_text(std::string_view untrusted);

}  // namespace uexec::base
