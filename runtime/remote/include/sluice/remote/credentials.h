// sluice/remote/credentials.h: how Sluice finds an S3 store and signs for it,
// from the standard places the AWS tools read.
//
// Credentials, first found wins:
//   1. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN);
//   2. the profile AWS_PROFILE (else "default") of the shared credentials
//      file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials):
//      aws_access_key_id, aws_secret_access_key, aws_session_token;
//   3. none: requests go unsigned (public buckets).
// Region: AWS_REGION, AWS_DEFAULT_REGION, the profile's `region` in
// AWS_CONFIG_FILE (else ~/.aws/config, section "[profile NAME]" or
// "[default]"), else us-east-1.
// Endpoint: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
// `endpoint_url` in the config file (not a nested block's), else AWS's own
// (https://BUCKET.s3.REGION.amazonaws.com, virtual-hosted). A custom endpoint
// is addressed path-style (ENDPOINT/BUCKET/KEY), as MinIO, s3rver and most
// other stores expect.
//
// TLS (https:// and an https endpoint): the system's CA store, unless told
// otherwise, for a store whose certificate a private CA signed (MinIO, Ceph
// on premises). CA file: for s3://, AWS_CA_BUNDLE, else the profile's
// `ca_bundle` in the config file; for any https URL then CURL_CA_BUNDLE,
// else SSL_CERT_FILE. CA folder (hashed names, as c_rehash makes):
// SSL_CERT_DIR. A certificate no trusted CA signed is an error, never
// retried and never waived.
//
// Errors: none thrown; a file that cannot be read counts as absent. An
// AWS_PROFILE that neither file holds is S3Config::problem (the AWS tools
// stop on it too), which every s3:// request then fails with.
// Thread safety: s3_config_from_environment and tls_config_from_environment
// read the environment (and files); call them before fork or in each
// process, not while another thread calls setenv.
#pragma once

#include <string>

namespace sluice::remote {

struct Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // "" without one
  std::string source;         // where they came from, for messages: "AWS_ACCESS_KEY_ID", "~/.aws/credentials [p]"
  bool anonymous() const { return access_key.empty(); }
};

struct S3Config {
  Credentials credentials;
  std::string region = "us-east-1";
  std::string endpoint;  // "" = AWS; else scheme://host[:port], no trailing '/'
  bool path_style = false;
  std::string ca_bundle;  // AWS_CA_BUNDLE or the profile's ca_bundle: "" = TlsConfig's
  std::string problem;  // why no s3:// request can go out ("" when none)
};

S3Config s3_config_from_environment();

// The CA certificates that https:// requests trust ("": the system's store).
struct TlsConfig {
  std::string ca_file;  // CURL_CA_BUNDLE, else SSL_CERT_FILE
  std::string ca_dir;   // SSL_CERT_DIR
};

TlsConfig tls_config_from_environment();

// The value of `key` in section `[section]` of an INI file such as
// ~/.aws/credentials; "" when the file, the section or the key is missing.
// With key "": "[section]" when the file has that section, else "".
std::string ini_value(const std::string& file, const std::string& section, const std::string& key);

}  // namespace sluice::remote
