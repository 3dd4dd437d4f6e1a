#include "bench/harness/json_text.h"

namespace lb::bench {

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent);
}

nlohmann::json parse_json(std::istream& in) {
  return nlohmann::json::parse(in);
}

}  // namespace lb::bench
