#include "whisper/transcript.h"

#include "whisper/transcript_writer.h"

namespace rayo::whisper {

// As faster-whisper's users build it: "".join(s.text for s in segments).strip().
std::string Transcript::text() const {
  std::string joined;
  for (const Segment& s : segments) joined += s.text;
  return std::string(strip_whitespace(joined));
}

}  // namespace rayo::whisper
