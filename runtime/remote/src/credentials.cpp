#include "sluice/remote/credentials.h"

#include <cstdlib>
#include <fstream>

namespace sluice::remote {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const std::size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

std::string aws_file(const char* variable, const char* name) {
  std::string path = env(variable);
  if (!path.empty()) return path;
  const std::string home = env("HOME");
  return home.empty() ? "" : home + "/.aws/" + name;
}

}  // namespace

std::string ini_value(const std::string& file, const std::string& section, const std::string& key) {
  if (file.empty()) return "";
  std::ifstream in(file);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    // An indented line belongs to a nested block ("s3 =" then "  endpoint_url = ..."):
    // not a key of the section itself.
    const bool nested = !line.empty() && (line[0] == ' ' || line[0] == '\t');
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';' || (nested && line.front() != '[')) continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = trim(line.substr(1, line.size() - 2)) == section;
      if (inside && key.empty()) return "[" + section + "]";
      continue;
    }
    if (!inside) continue;
    const std::size_t eq = line.find('=');
    if (eq != std::string::npos && trim(line.substr(0, eq)) == key) return trim(line.substr(eq + 1));
  }
  return "";
}

S3Config s3_config_from_environment() {
  S3Config config;
  std::string profile = env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  Credentials& c = config.credentials;
  const std::string file = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
  c.access_key = env("AWS_ACCESS_KEY_ID");
  c.secret_key = env("AWS_SECRET_ACCESS_KEY");
  if (!c.access_key.empty() && !c.secret_key.empty()) {
    c.session_token = env("AWS_SESSION_TOKEN");
    c.source = "AWS_ACCESS_KEY_ID";
  } else {
    c.access_key = ini_value(file, profile, "aws_access_key_id");
    c.secret_key = ini_value(file, profile, "aws_secret_access_key");
    c.session_token = ini_value(file, profile, "aws_session_token");
    c.source = file + " [" + profile + "]";
    if (c.access_key.empty() || c.secret_key.empty()) c = Credentials{};
  }
  const std::string config_file = aws_file("AWS_CONFIG_FILE", "config");
  const std::string section = profile == "default" ? "default" : "profile " + profile;
  std::string region = env("AWS_REGION");
  if (region.empty()) region = env("AWS_DEFAULT_REGION");
  if (region.empty()) region = ini_value(config_file, section, "region");
  if (!region.empty()) config.region = region;
  config.endpoint = env("AWS_ENDPOINT_URL_S3");
  if (config.endpoint.empty()) config.endpoint = env("AWS_ENDPOINT_URL");
  if (config.endpoint.empty()) config.endpoint = ini_value(config_file, section, "endpoint_url");
  while (!config.endpoint.empty() && config.endpoint.back() == '/') config.endpoint.pop_back();
  config.path_style = !config.endpoint.empty();
  config.ca_bundle = env("AWS_CA_BUNDLE");
  if (config.ca_bundle.empty()) config.ca_bundle = ini_value(config_file, section, "ca_bundle");
  if (profile != "default" && ini_value(file, profile, "").empty() && ini_value(config_file, section, "").empty())
    config.problem = "the profile '" + profile + "' (AWS_PROFILE) is in neither " +
                     (file.empty() ? "~/.aws/credentials" : file) + " nor " +
                     (config_file.empty() ? "~/.aws/config" : config_file) +
                     "; set AWS_PROFILE to one of their profiles, or unset it (the AWS tools stop on it too)";
  return config;
}

TlsConfig tls_config_from_environment() {
  TlsConfig tls;
  tls.ca_file = env("CURL_CA_BUNDLE");
  if (tls.ca_file.empty()) tls.ca_file = env("SSL_CERT_FILE");
  tls.ca_dir = env("SSL_CERT_DIR");
  return tls;
}

}  // namespace sluice::remote
