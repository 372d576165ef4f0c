#pragma once
// Text on its way out of the process. Two destinations are unforgiving: JSON (nlohmann's dump()
// throws on a string that is not UTF-8, and other readers refuse it) and terminals (control
// characters are commands: ESC starts escape sequences that move the cursor, rewrite the title or
// hide what follows; Unicode bidi controls reorder what is shown). Text from users is refused at
// the input edges when it is not UTF-8, but text already stored, written by older versions or by
// hand, may still be anything: these functions make any of it safe to show without refusing it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace gpupool {

// The length (1-4) of the well-formed UTF-8 sequence that starts at text[i], with its code point
// in *code_point; 0 when none does (a stray continuation byte, an overlong form, a surrogate, a
// code point above U+10FFFF, a truncated sequence). `i` must be < text.size().
size_t Utf8SequenceAt(std::string_view text, size_t i, char32_t* code_point);

// `text` with every byte that is not part of well-formed UTF-8 replaced by U+FFFD (what nlohmann's
// error_handler_t::replace and browsers show). Valid text is returned unchanged.
std::string ToValidUtf8(std::string_view text);

// Where the first byte of `text` that is not well-formed UTF-8 is, for errors that point at it
// (lines and columns from 1; columns count characters).
struct InvalidUtf8 {
  size_t line = 1;
  size_t column = 1;
  unsigned char byte = 0;
  std::string ByteText() const;  // "0xff"
};
std::optional<InvalidUtf8> FindInvalidUtf8(std::string_view text);

enum class Newlines { kEscape, kKeep };

// `text` made safe for a terminal, every character still visible: C0 controls (NUL, ESC, TAB,
// CR...), DEL and bytes that are not UTF-8 become `\xNN` (`\x1b`); C1 controls (U+0080-U+009F),
// the bidi controls that reorder what follows (U+061C, U+200E, U+200F, U+202A-U+202E,
// U+2066-U+2069) and the line and paragraph separators U+2028/U+2029 become `\uNNNN`
// (`\u202e`). With Newlines::kKeep, '\n' stays (multi-line text such as a rendered table).
std::string TerminalSafe(std::string_view text, Newlines newlines = Newlines::kEscape);

}  // namespace gpupool
