// The hand-spliced reply (encode_clean_string_result) is byte for byte what encode_result
// writes, whatever the id.
#include <doctest/doctest.h>

#include "rpc/json_rpc.h"

using uexec::rpc::encode_clean_string_result;
using uexec::rpc::encode_result;
using uexec::rpc::json;

TEST_CASE("encode_clean_string_result writes what encode_result writes") {
  const std::string data = "aGVsbG8gd29ybGQK+/8=";
  for (const json& id : {json(7), json(-1), json("a \"quoted\" id}}"), json("\"dataBase64\":\"\"}}"), json(nullptr),
                         json(1.5)}) {
    CAPTURE(id.dump());
    CHECK(encode_clean_string_result(id, "dataBase64", data) == encode_result(id, {{"dataBase64", data}}));
    CHECK(encode_clean_string_result(id, "dataBase64", "") == encode_result(id, {{"dataBase64", ""}}));
  }
  std::string big(1 << 20, 'A');
  CHECK(encode_clean_string_result(3, "x", big) == encode_result(3, {{"x", big}}));
}
