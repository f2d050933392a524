// utf8_cut.h: UTF-8 for people and models, raw bytes for everyone else.
//
// Raw PTY bytes are kept unchanged in the ring; only text handed to a model is decoded, and
// lossily: each maximal invalid subpart becomes one U+FFFD (Unicode's "maximal subpart"
// rule). Cuts for truncation are made in raw byte space at extended grapheme cluster
// boundaries (utf8proc), or at a code point boundary when no cluster boundary lies within
// 32 bytes, so every piece decodes to valid UTF-8 and a reported range is a raw range.
// Pure: no libuv, no JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace uexec::session {

// Each maximal invalid subpart becomes U+FFFD; valid text is unchanged.
std::string lossy_decode(std::string_view raw);

// Length (0-3) of a trailing sequence that is a valid but incomplete prefix: a reader
// holds it back until the rest arrives (or the output closes).
std::size_t incomplete_tail(std::string_view raw) noexcept;

// The largest cut <= pos at a grapheme boundary (or code point boundary) of `raw`.
std::size_t cut_back(std::string_view raw, std::size_t pos);
// The smallest cut >= pos at a grapheme boundary (or code point boundary) of `raw`.
std::size_t cut_forward(std::string_view raw, std::size_t pos);

// Length of the valid or maximal-invalid unit starting at raw[i] (1-4).
std::size_t unit_length(std::string_view raw, std::size_t i) noexcept;

}  // namespace uexec::session
