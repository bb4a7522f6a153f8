"""Stubs generated from api/proto/lookahead/v1 by grpcio-tools; see generate.sh."""
