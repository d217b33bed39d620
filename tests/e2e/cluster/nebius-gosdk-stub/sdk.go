// Package gosdk stands in for the Nebius SDK in the e2e stage's build of
// provider-kubernetes: the identifiers the provider calls, none that work.
package gosdk

import (
	"context"
	"errors"

	"github.com/nebius/gosdk/auth"
)

var errStandIn = errors.New("Nebius authentication is not built into this provider (e2e stand-in for github.com/nebius/gosdk)")

// SDK is never constructed: New always fails.
type SDK struct{}

// Option configures New.
type Option interface{ option() }

// Credentials are what WithCredentials takes.
type Credentials interface{ credentials() }

type credentialsOption struct{ Credentials }

func (credentialsOption) option() {}

type serviceAccount struct{ auth.Parser }

func (serviceAccount) credentials() {}

// WithCredentials mirrors the real option.
func WithCredentials(c Credentials) Option { return credentialsOption{c} }

// ServiceAccountReader mirrors the real constructor.
func ServiceAccountReader(p auth.Parser) Credentials { return serviceAccount{p} }

// New fails: the stage has no Nebius clusters.
func New(context.Context, ...Option) (*SDK, error) { return nil, errStandIn }

// BearerToken fails like New.
func (*SDK) BearerToken(context.Context) (auth.BearerToken, error) {
	return auth.BearerToken{}, errStandIn
}
