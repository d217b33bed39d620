// Package auth stands in for the Nebius SDK's auth package (see ../sdk.go).
package auth

// BearerToken is an IAM token.
type BearerToken struct {
	Token string
}

// Parser reads service-account credentials.
type Parser interface{ parser() }

type privateKeyParser struct{}

func (privateKeyParser) parser() {}

// NewPrivateKeyParser mirrors the real constructor.
func NewPrivateKeyParser(privateKey []byte, publicKeyID, serviceAccountID string) Parser {
	return privateKeyParser{}
}
