"""An S3 endpoint that only checks AWS Signature V4, with botocore's signer as
the oracle: each request's signature is computed again from the headers it
signed, and the answer is 200 "signed" when they match, else 403 with both
canonical requests. Usage: sigv4_oracle.py PORT ACCESS_KEY SECRET REGION
(prints "ready" once listening; serves until killed)."""
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

PORT, KEY, SECRET, REGION = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def check(self):
        auth = self.headers.get("Authorization", "")
        fields = dict(part.strip().split("=", 1) for part in auth.split(" ", 1)[1].split(",")) if " " in auth else {}
        signed = fields.get("SignedHeaders", "").split(";")
        headers = {name: self.headers.get(name) for name in signed if name != "host"}
        url = "http://" + self.headers["Host"] + self.path
        request = AWSRequest(method=self.command, url=url, headers=headers)
        request.context["timestamp"] = self.headers.get("x-amz-date", "")
        signer = S3SigV4Auth(Credentials(KEY, SECRET), "s3", REGION)
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        if expected == fields.get("Signature"):
            return 200, b"signed"
        return 403, ("<Error><Code>SignatureDoesNotMatch</Code><Message>botocore's canonical request: "
                     + canonical.replace("\n", "|") + "</Message></Error>").encode()

    def do_GET(self):
        status, body = self.check()
        wanted = self.headers.get("Range", "")
        if status == 200 and wanted.startswith("bytes="):
            first, last = (int(v) for v in wanted[6:].split("-"))
            status, body = 206, b"x" * (last - first + 1)
            self.send_response(status)
            self.send_header("Content-Range", "bytes %d-%d/1000" % (first, last))
        else:
            self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        status, body = self.check()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", PORT), Handler)
print("ready", flush=True)
server.serve_forever()
