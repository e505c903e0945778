//go:build cgo

package codemode

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// A continuation is
//
//	"cmc1" | flags (1 byte: 1 = sealed) | body | HMAC-SHA-256 tag (32 bytes)
//
// The tag covers everything before it, under a key derived from the
// Governance's Key (HKDF-SHA-256, info "codemode continuation mac v1").
// The body is the JSON of continuationBody, or, sealed, a 12-byte nonce
// and its AES-256-GCM sealing (key: info "codemode continuation seal v1";
// additional data: the first five bytes). Nothing is read before the tag
// checks out.
const (
	continuationMagic = "cmc1"
	continuationHead  = len(continuationMagic) + 1
	continuationTag   = sha256.Size
	sealedFlag        = 1
	// MaxContinuation is the largest continuation Resume reads.
	MaxContinuation = 64 << 20
)

// continuationBody is what a continuation holds: the program and what it
// ran with, and its record of tool calls up to the one that paused it.
type continuationBody struct {
	V       int    `json:"v"`
	ID      string `json:"id"`
	Created int64  `json:"created"` // Unix seconds
	Expires int64  `json:"expires"` // Unix seconds, rounded up: what a reader older than ExpiresNs goes by
	// ExpiresNs is the expiry exactly (Unix nanoseconds): the TTL as given,
	// not rounded to a second. A body without it (made before it was
	// added) expires at Expires.
	ExpiresNs int64        `json:"expiresNs,omitempty"`
	Mode      string       `json:"mode"` // "run" or "execute"
	Code      string       `json:"code"`
	Providers []Provider   `json:"providers,omitempty"`
	Limits    Limits       `json:"limits"`
	Seed      uint64       `json:"seed"`
	Clock     time.Time    `json:"clock"`
	Calls     []callRecord `json:"calls"`
	Pending   int          `json:"pending"` // the index in Calls of the call waiting for a decision
	// Grants are the capabilities a Grant limited the run to (nil: no
	// Grant); the resumed run is limited to them again.
	Grants []string `json:"grants,omitempty"`
	// OwnNetwork says the program had a network of its own
	// (Request.Outbound), which a resume cannot restore: it is refused.
	OwnNetwork bool `json:"ownNetwork,omitempty"`
	// Session is the id of the session the run was one of ("" for none),
	// and SessionRuns how many runs the session had kept when it began:
	// it resumes only in that session, in that state (Session.Resume).
	Session     string `json:"session,omitempty"`
	SessionRuns int    `json:"sessionRuns,omitempty"`
}

const (
	modeRun     = "run"
	modeExecute = "execute"
)

// ContinuationError is a continuation Resume refused before anything ran.
// It matches [ErrContinuation] with errors.Is, and [ErrContinuationExpired]
// when it expired.
type ContinuationError struct {
	Reason string
	cause  error
}

// Error says why.
func (e *ContinuationError) Error() string { return "codemode: continuation refused: " + e.Reason }

// Is matches ErrContinuation, and ErrContinuationExpired for an expired one.
func (e *ContinuationError) Is(target error) bool {
	return target == ErrContinuation || (target == ErrContinuationExpired && e.cause == ErrContinuationExpired)
}

// Unwrap is the Redeem hook's error, if it refused.
func (e *ContinuationError) Unwrap() error {
	if e.cause == ErrContinuationExpired {
		return nil
	}
	return e.cause
}

var (
	// ErrContinuation is matched by every refused continuation: tampered,
	// truncated, made with another key, expired, redeemed, or for another
	// executor.
	ErrContinuation = errors.New("codemode: continuation refused")
	// ErrContinuationExpired is matched by a continuation past its expiry.
	ErrContinuationExpired = errors.New("codemode: continuation expired")
)

func refuse(format string, args ...any) *ContinuationError {
	return &ContinuationError{Reason: fmt.Sprintf(format, args...)}
}

// contKeys are the keys derived from a Governance Key.
type contKeys struct{ mac, seal []byte }

// keysOf are g's derived keys: derived once by WithGovernance, else now.
func keysOf(g *Governance) contKeys {
	if g.keys != nil {
		return *g.keys
	}
	mac, seal := continuationKeys(g.Key)
	return contKeys{mac, seal}
}

// continuationKeys derives the MAC and sealing keys from the host's key.
func continuationKeys(key []byte) (mac, seal []byte) {
	mac, err := hkdf.Key(sha256.New, key, nil, "codemode continuation mac v1", 32)
	if err != nil {
		panic(err) // only for lengths hkdf cannot give: 32 always can
	}
	seal, err = hkdf.Key(sha256.New, key, nil, "codemode continuation seal v1", 32)
	if err != nil {
		panic(err)
	}
	return mac, seal
}

// sealContinuation encodes, optionally seals, and authenticates a body.
func sealContinuation(g *Governance, b *continuationBody) ([]byte, error) {
	plain, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return sealBytes(continuationMagic, keysOf(g), g.Encrypt, plain)
}

// sealBytes is magic, the flags, plain (sealed when encrypt is set) and
// the tag over them, under keys: a continuation's or a session's form.
func sealBytes(magic string, k contKeys, encrypt bool, plain []byte) ([]byte, error) {
	macKey, sealKey := k.mac, k.seal
	head := len(magic) + 1
	out := append(make([]byte, 0, head+len(plain)+64), magic...)
	if encrypt {
		out = append(out, sealedFlag)
		aead, err := newAEAD(sealKey)
		if err != nil {
			return nil, err
		}
		nonce := make([]byte, aead.NonceSize())
		rand.Read(nonce)
		out = append(out, nonce...)
		out = aead.Seal(out, nonce, plain, out[:head])
	} else {
		out = append(out, 0)
		out = append(out, plain...)
	}
	m := hmac.New(sha256.New, macKey)
	m.Write(out)
	return m.Sum(out), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// openContinuation authenticates and decodes a continuation: nothing of
// it is read before its tag checks out under key.
func openContinuation(key []byte, c []byte, now time.Time) (*continuationBody, error) {
	return openWith(&Governance{Key: key}, c, now)
}

// openWith is openContinuation under g's key.
func openWith(g *Governance, c []byte, now time.Time) (*continuationBody, error) {
	if len(g.Key) == 0 {
		return nil, refuse("this executor has no governance key (WithGovernance)")
	}
	if len(c) > MaxContinuation {
		return nil, refuse("it is %d bytes, over %d", len(c), MaxContinuation)
	}
	plain, err := openBytes(continuationMagic, "continuation", keysOf(g), c)
	if err != nil {
		return nil, err
	}
	var b continuationBody
	if err := jsonv2.Unmarshal(plain, &b, jsonv1.DefaultOptionsV1()); err != nil {
		return nil, refuse("its body is not a continuation: %v", err)
	}
	switch {
	case b.V != 1:
		return nil, refuse("version %d is not one this executor reads", b.V)
	case b.Mode != modeRun && b.Mode != modeExecute:
		return nil, refuse("unknown mode %q", b.Mode)
	case b.Pending < 0 || b.Pending >= len(b.Calls) || b.Calls[b.Pending].answered():
		return nil, refuse("it has no call waiting for a decision")
	case !now.Before(b.expiry()):
		return nil, &ContinuationError{Reason: "it expired at " + b.expiry().UTC().Format(time.RFC3339Nano),
			cause: ErrContinuationExpired}
	}
	return &b, nil
}

// openBytes authenticates what sealBytes made under keys and returns its
// plain body: nothing of it is read before its tag checks out. what names
// it in refusals.
func openBytes(magic, what string, k contKeys, c []byte) ([]byte, error) {
	head := len(magic) + 1
	if len(c) < head+continuationTag || string(c[:len(magic)]) != magic {
		return nil, refuse("it is not a %s, or it is truncated", what)
	}
	body, tag := c[:len(c)-continuationTag], c[len(c)-continuationTag:]
	m := hmac.New(sha256.New, k.mac)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), tag) {
		return nil, refuse("its tag does not match: it was altered, truncated, or made with another key")
	}
	flags, plain := body[len(magic)], body[head:]
	switch flags {
	case 0:
		return plain, nil
	case sealedFlag:
		aead, err := newAEAD(k.seal)
		if err != nil {
			return nil, refuse("%v", err)
		}
		if len(plain) < aead.NonceSize() {
			return nil, refuse("its sealed body is truncated")
		}
		nonce, sealed := plain[:aead.NonceSize()], plain[aead.NonceSize():]
		if plain, err = aead.Open(nil, nonce, sealed, body[:head]); err != nil {
			return nil, refuse("its sealed body does not open")
		}
		return plain, nil
	}
	return nil, refuse("unknown flags %#x", flags)
}

// expiry is when b stops being accepted.
func (b *continuationBody) expiry() time.Time {
	if b.ExpiresNs != 0 {
		return time.Unix(0, b.ExpiresNs)
	}
	return time.Unix(b.Expires, 0)
}

// SingleUse is a Governance.Redeem that lets each continuation resume once
// in this process: it remembers the ids it has seen until they expire.
// Safe for concurrent use.
func SingleUse() func(id string, expires time.Time) error {
	var mu sync.Mutex
	seen := map[string]time.Time{}
	return func(id string, expires time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		for k, exp := range seen {
			if !now.Before(exp) {
				delete(seen, k)
			}
		}
		if _, ok := seen[id]; ok {
			return errors.New("it was resumed before")
		}
		seen[id] = expires
		return nil
	}
}

// ContinuationInfo is what a continuation says of itself, for a host that
// keeps continuations and shows them to people (the call waiting) or
// picks the executor to resume one on (its limits).
type ContinuationInfo struct {
	ID string
	// Execute is true for an Execute program, false for a Run script.
	Execute bool
	// Tool and Args are the call waiting for a decision.
	Tool string
	Args json.RawMessage
	// Completed is how many calls it answers from its record.
	Completed int
	// Providers names an Execute program's providers.
	Providers []string
	// Limits are the limits it ran under (a resume needs the same memory,
	// stack, payload and logs).
	Limits           Limits
	Created, Expires time.Time
}

// InspectContinuation authenticates a continuation with key (the
// Governance Key it was made with) and says what it holds; it refuses
// what Resume refuses before running (a [*ContinuationError]), but for
// the limits and Redeem, which are the resuming executor's.
func InspectContinuation(key, continuation []byte) (*ContinuationInfo, error) {
	b, err := openContinuation(key, continuation, time.Now())
	if err != nil {
		return nil, err
	}
	info := &ContinuationInfo{ID: b.ID, Execute: b.Mode == modeExecute, Tool: b.Calls[b.Pending].Tool,
		Args: json.RawMessage(b.Calls[b.Pending].Args), Limits: b.Limits,
		Created: time.Unix(b.Created, 0), Expires: b.expiry()}
	for i := range b.Calls {
		if b.Calls[i].answered() {
			info.Completed++
		}
	}
	for _, p := range b.Providers {
		info.Providers = append(info.Providers, p.Name)
	}
	return info, nil
}

// OpenContinuation authenticates a continuation with key (the Governance
// Key it was made with) and returns its body, the JSON of what it holds
// (SECURITY.md lists it): for a host that carries a run between keys, as
// the daemon's client does (the daemon seals with a key of its own, the
// client with the host's, which never leaves it). It refuses what
// InspectContinuation refuses.
func OpenContinuation(key, continuation []byte) ([]byte, error) {
	b, err := openContinuation(key, continuation, time.Now())
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// SealContinuation makes a continuation of a body OpenContinuation
// returned, under g's Key (sealed if g.Encrypt); its expiry and id are the
// body's. A body that is not one is a [*ContinuationError].
func SealContinuation(g Governance, body []byte) ([]byte, error) {
	if len(g.Key) < 32 {
		return nil, refuse("the key is %d bytes; it needs at least 32", len(g.Key))
	}
	var b continuationBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, refuse("its body is not a continuation: %v", err)
	}
	c, err := sealContinuation(&g, &b)
	if err != nil {
		return nil, err
	}
	if _, err := openContinuation(g.Key, c, time.Now()); err != nil {
		return nil, err // the body's own checks (a pending call, not expired)
	}
	return c, nil
}
