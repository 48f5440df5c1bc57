#!/usr/bin/env bash
# Makes the certificates the TLS tests use, in DIR: a CA, a server and a
# client certificate it signs (for localhost and 127.0.0.1), and a rogue CA
# with a client certificate of its own. EC P-256 keys: fast to make.
set -euo pipefail
dir=$1
mkdir -p "$dir" && cd "$dir"
key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1" 2>/dev/null
}
signed() { # name ca
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -out "$1.pem" -days 2 -extfile san.ext 2>/dev/null
}
ca ca
signed server ca
signed client ca
ca rogue-ca
signed rogue rogue-ca
