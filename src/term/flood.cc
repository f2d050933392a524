#include "term/flood.h"

#include <algorithm>

#include <utf8proc.h>

#include "term/cells.h"

namespace uexec::term {

SkippedRun read_skipped_run(std::string_view run, int cols, std::size_t max_rows) {
  SkippedRun out;
  // The pen: the SGRs after the last reset (a run holds no other escape sequence).
  std::string& pen = out.pen;
  std::size_t from = 0;
  for (std::size_t at = run.rfind('\x1b'); at != std::string_view::npos; at = at ? run.rfind('\x1b', at - 1) : std::string_view::npos) {
    std::string_view seq = run.substr(at, run.find('m', at) - at + 1);
    if (seq == "\x1b[m" || seq == "\x1b[0m") {
      from = at;  // the reset itself too: the pen before the run is not the default
      break;
    }
  }
  for (std::size_t at = run.find('\x1b', from); at != std::string_view::npos; at = run.find('\x1b', at + 1))
    pen.append(run.substr(at, run.find('m', at) - at + 1));
  // The text: only the last lines can still be in the scrollback.
  std::size_t text_from = 0;
  if (max_rows > 0) {
    std::size_t lf = run.size() - 1, wanted = max_rows + 1;
    while (wanted-- > 0 && lf > 0) {
      std::size_t prev = run.rfind('\n', lf - 1);
      if (prev == std::string_view::npos) {
        lf = 0;
        break;
      }
      lf = prev;
    }
    text_from = lf == 0 ? 0 : lf + 1;
  } else {
    text_from = run.size();
  }
  std::vector<std::string> lines(1);
  for (std::size_t i = text_from; i < run.size(); ++i) {
    // Most lines are plain ASCII that fits: taken whole.
    if (lines.back().empty()) {
      std::size_t j = i;
      while (j < run.size() && run[j] >= 0x20 && run[j] < 0x7f) ++j;
      if (j + 1 < run.size() && run[j] == '\r' && run[j + 1] == '\n' && j - i <= static_cast<std::size_t>(cols)) {
        lines.back().assign(run.substr(i, j - i));
        lines.emplace_back();
        i = j + 1;
        continue;
      }
    }
    char c = run[i];
    if (c == 0x1b) {
      i = run.find('m', i);
    } else if (c == '\r') {
      if (i + 1 < run.size() && run[i + 1] == '\n') {
        lines.emplace_back();
        ++i;
      } else {
        lines.back().clear();
      }
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      // Only valid UTF-8, without C1 controls, reaches the scrollback (and so a repaint).
      utf8proc_int32_t cp = -1;
      auto len = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(run.data() + i),
                                  static_cast<utf8proc_ssize_t>(run.size() - i), &cp);
      if (len < 1) {
        len = 1;
        cp = 0xFFFD;
      }
      if (cp >= 0xA0 && lines.back().size() < kMaxScrollbackLine) put_utf8(lines.back(), static_cast<std::uint32_t>(cp));
      i += static_cast<std::size_t>(len) - 1;
    } else if (c >= 0x20 && c != 0x7f) {
      if (lines.back().size() < kMaxScrollbackLine) lines.back() += c;
    } else if (c == '\t') {
      lines.back() += ' ';
    }
  }
  lines.pop_back();  // the run ends with CRLF
  if (max_rows == 0) return out;
  out.replaces_history = text_from > 0 && lines.size() >= max_rows;
  // Only the last max_rows rows can survive; wrapped at the width (utf8proc's widths).
  std::vector<std::string>& rows_out = out.rows;
  for (auto it = lines.rbegin(); it != lines.rend() && rows_out.size() < max_rows; ++it) {
    if (it->size() <= static_cast<std::size_t>(cols) &&
        std::all_of(it->begin(), it->end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x80; })) {
      rtrim(*it);
      rows_out.push_back(std::move(*it));
      continue;
    }
    std::vector<std::string> pieces;
    std::string cur_piece;
    int width = 0;
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(it->data());
    utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(it->size());
    while (left > 0) {
      utf8proc_int32_t cp = *p;
      utf8proc_ssize_t len = 1;
      if (cp >= 0x80) len = utf8proc_iterate(p, left, &cp);
      if (len < 1) break;  // cannot happen: the text was made valid above
      int w = cp < 0x80 ? 1 : utf8proc_charwidth(cp);
      if (w > 0 && width + w > cols) {
        pieces.push_back(std::move(cur_piece));
        cur_piece.clear();
        width = 0;
      }
      width += w;
      cur_piece.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(len));
      p += len;
      left -= len;
    }
    pieces.push_back(std::move(cur_piece));
    for (auto piece = pieces.rbegin(); piece != pieces.rend(); ++piece) {
      rtrim(*piece);
      rows_out.push_back(std::move(*piece));
    }
  }
  std::reverse(rows_out.begin(), rows_out.end());  // oldest first
  return out;
}

}  // namespace uexec::term
