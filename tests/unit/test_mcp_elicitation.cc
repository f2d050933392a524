// Unit tests for rpc/mcp_elicitation.h: approvals asked of an MCP client with
// elicitation/create (MCP 2025-06-18), and what its answers mean.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rpc/mcp_elicitation.h"

using namespace uexec;
using nlohmann::json;
using policy::Decision;

namespace {

json answer(json result) { return {{"jsonrpc", "2.0"}, {"id", "uexec-approval-1"}, {"result", std::move(result)}}; }

rpc::ApprovalQuestion retry_question() {
  policy::ApprovalRequest req;
  req.purpose = "sandbox_retry";
  req.command = {"bash", "-lc", "echo hi > /var/tmp/x"};
  req.cwd = "/work";
  req.reason = "command failed; retry without sandbox?";
  return rpc::question_for(req);
}

}  // namespace

TEST_CASE("elicitation/create params: a message naming the command and cwd, and an enum schema") {
  auto q = retry_question();
  CHECK(q.command == "echo hi > /var/tmp/x");
  json p = rpc::elicitation_params(q);
  std::string msg = p["message"];
  CHECK(msg.find("echo hi > /var/tmp/x") != std::string::npos);
  CHECK(msg.find("/work") != std::string::npos);
  CHECK(msg.find("without the sandbox") != std::string::npos);
  const json& s = p["requestedSchema"];
  CHECK(s["type"] == "object");
  CHECK(s["required"] == json::array({"decision"}));
  REQUIRE(s["properties"].size() == 1);
  const json& d = s["properties"]["decision"];
  CHECK(d["type"] == "string");
  CHECK(d["enum"] == json::array({"approved", "approved_for_session", "denied", "abort"}));
  CHECK(d["enumNames"].size() == 4);

  rpc::ApprovalQuestion esc{"escalation", "make install", "/src", "installs into /usr/local", ""};
  std::string m2 = rpc::elicitation_params(esc)["message"];
  CHECK(m2.find("make install") != std::string::npos);
  CHECK(m2.find("installs into /usr/local") != std::string::npos);
  rpc::ApprovalQuestion exec{"exec", "rm -rf build", "/src", "untrusted", ""};
  std::string m3 = rpc::elicitation_params(exec)["message"];
  CHECK(m3.find("rm -rf build") != std::string::npos);
}

TEST_CASE("elicitation/create params: control characters in the command or the denial are shown, not sent") {
  // The agent wrote the command and the sandboxed program named the denied path: neither may
  // move the cursor over the question in a client that prints it on a terminal.
  policy::ApprovalRequest req;
  req.purpose = "escalation";
  req.command = {"bash", "-lc", "rm -rf ~\x1b[1A\x1b[2Kls"};
  req.cwd = "/work\x07";
  req.reason = "needs \xe2\x80\xae network";
  std::string msg = rpc::elicitation_params(rpc::question_for(req))["message"];
  CHECK(msg.find('\x1b') == std::string::npos);
  CHECK(msg.find('\x07') == std::string::npos);
  CHECK(msg.find("rm -rf ~\\e[1A\\e[2Kls") != std::string::npos);
  CHECK(msg.find("/work\\x07") != std::string::npos);
  CHECK(msg.find("needs \\u{202e} network") != std::string::npos);
}

TEST_CASE("elicitation answers: accept carries the decision; anything else is denied") {
  CHECK(rpc::decision_from_elicitation(answer({{"action", "accept"}, {"content", {{"decision", "approved"}}}})) ==
        Decision::kApproved);
  CHECK(rpc::decision_from_elicitation(
            answer({{"action", "accept"}, {"content", {{"decision", "approved_for_session"}}}})) ==
        Decision::kApprovedForSession);
  CHECK(rpc::decision_from_elicitation(answer({{"action", "accept"}, {"content", {{"decision", "abort"}}}})) ==
        Decision::kAbort);
  CHECK(rpc::decision_from_elicitation(answer({{"action", "accept"}, {"content", {{"decision", "denied"}}}})) ==
        Decision::kDenied);
  for (json bad : {answer({{"action", "decline"}}), answer({{"action", "cancel"}}),
                   answer({{"action", "decline"}, {"content", {{"decision", "approved"}}}}),
                   answer({{"action", "accept"}}), answer({{"action", "accept"}, {"content", "approved"}}),
                   answer({{"action", "accept"}, {"content", {{"decision", "yes"}}}}),
                   answer({{"action", "accept"}, {"content", {{"decision", 1}}}}), answer(json::array()),
                   json{{"jsonrpc", "2.0"}, {"id", "uexec-approval-1"}, {"error", {{"code", -1}, {"message", "no"}}}},
                   json("approved")})
    CHECK_MESSAGE(rpc::decision_from_elicitation(bad) == Decision::kDenied, bad.dump());
}

TEST_CASE("ApprovalElicitor: without the capability, denied at once and nothing sent") {
  std::vector<std::string> sent;
  rpc::ApprovalElicitor e([&](std::string m) { sent.push_back(std::move(m)); });
  e.set_client_capabilities({{"capabilities", {{"sampling", json::object()}}}});
  CHECK(!e.enabled());
  std::optional<Decision> got;
  CHECK(e.ask(retry_question(), [&](Decision d) { got = d; }).empty());
  CHECK(got == Decision::kDenied);
  CHECK(sent.empty());
  std::string note = rpc::approval_needed_note(retry_question());
  CHECK(note.find("Approval needed") != std::string::npos);
  CHECK(note.find("elicitation") != std::string::npos);
}

TEST_CASE("ApprovalElicitor: asks, takes exactly the answer to its own request, withdraws") {
  std::vector<json> sent;
  rpc::ApprovalElicitor e([&](std::string m) { sent.push_back(json::parse(m)); });
  e.set_client_capabilities({{"capabilities", {{"elicitation", json::object()}}}});
  REQUIRE(e.enabled());
  std::vector<Decision> got;
  std::string id = e.ask(retry_question(), [&](Decision d) { got.push_back(d); });
  REQUIRE(sent.size() == 1);
  CHECK(sent[0]["method"] == "elicitation/create");
  CHECK(sent[0]["id"] == id);
  CHECK(sent[0]["params"]["requestedSchema"]["properties"].contains("decision"));
  CHECK(!e.on_response({{"jsonrpc", "2.0"}, {"id", "someone-else"}, {"result", json::object()}}));
  CHECK(!e.on_response({{"jsonrpc", "2.0"}, {"id", 7}, {"result", json::object()}}));
  CHECK(got.empty());
  json r = {{"jsonrpc", "2.0"}, {"id", id}, {"result", {{"action", "accept"}, {"content", {{"decision", "approved"}}}}}};
  CHECK(e.on_response(r));
  CHECK(!e.on_response(r));  // a second answer is not taken
  CHECK(got == std::vector<Decision>{Decision::kApproved});

  // withdraw: notifications/cancelled, and the answer never runs.
  std::string id2 = e.ask(retry_question(), [&](Decision d) { got.push_back(d); });
  e.withdraw(id2);
  CHECK(sent.back()["method"] == "notifications/cancelled");
  CHECK(sent.back()["params"]["requestId"] == id2);
  CHECK(e.pending() == 0);
  CHECK(got.size() == 1);

  // deny_all: each open question withdrawn and answered denied.
  e.ask(retry_question(), [&](Decision d) { got.push_back(d); });
  e.ask(retry_question(), [&](Decision d) { got.push_back(d); });
  e.deny_all();
  CHECK(got == std::vector<Decision>{Decision::kApproved, Decision::kDenied, Decision::kDenied});
  CHECK(e.pending() == 0);
}
