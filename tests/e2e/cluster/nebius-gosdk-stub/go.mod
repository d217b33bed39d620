// A compile-only stand-in for github.com/nebius/gosdk, which the Go module
// proxy does not serve. provider-kubernetes v1.3.0 imports it only to
// authenticate to Nebius clusters; the e2e stage never does, so every call
// here fails with an error that says so.
module github.com/nebius/gosdk

go 1.24
