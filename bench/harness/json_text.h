// JSON read and written through one file: nlohmann's parser and serializer are templates
// instantiated in every file that calls json::parse or dump(), 8-15 s of compiling each under
// the sanitizers (the harness's three largest files took 23-34 s, AMD EPYC Zen 5 VM), so the
// harness calls these two instead, compiled once in json_text.cpp.
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>

namespace lb::bench {

// j as text: on one line (indent < 0, the default) or indented by `indent` spaces; NaN and
// infinities are written as null, as nlohmann writes them.
std::string json_text(const nlohmann::json& j, int indent = -1);

// The JSON document read from `in`; throws nlohmann::json::exception when it is not one.
nlohmann::json parse_json(std::istream& in);

}  // namespace lb::bench
