// loom_help_formatter and parse_error_message (cli_style.h).
#include "cli_style.h"

#include <regex>

namespace loom::cli {
namespace {

// CLI11's type names as train's flag table names them; validator suffixes
// (INT:POSITIVE, "INT:INT") dropped.
std::string loom_type_name(std::string type) {
  type = type.substr(0, type.find(':'));
  if (type == "TEXT") return "STRING";
  return type;
}

class LoomFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0 || opt->get_type_name().empty()) return "";
    return " " + loom_type_name(opt->get_type_name());
  }
  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    const std::string& def = opt->get_default_str();
    if (!def.empty() && desc.find("[default: ") == std::string::npos)
      desc += " [default: " + def + "]";
    return desc;
  }
};

}  // namespace

std::shared_ptr<CLI::Formatter> loom_help_formatter() { return std::make_shared<LoomFormatter>(); }

std::string parse_error_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  std::smatch m;
  static const std::regex missing(R"(^(\S+): \d+ required \S+ missing$)");
  static const std::regex extra(R"(^The following arguments? (?:was|were) not expected: (.*)$)");
  static const std::regex convert(R"(^Could not convert: (\S+) = (.*)$)");
  if (std::regex_match(what, m, missing)) return m[1].str() + ": needs a value";
  if (std::regex_match(what, m, convert))
    return m[1].str() + ": cannot read '" + m[2].str() + "' (see --help for its type)";
  if (std::regex_match(what, m, extra)) {
    const std::string arg = m[1].str();
    std::string hint = arg == "-v" ? "; the version is --version" : "";
    return "unknown flag '" + arg + "' (see loom --help" + hint + ")";
  }
  return what;
}

}  // namespace loom::cli
