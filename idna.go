package codemode

import (
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/secure/bidirule"
	"golang.org/x/text/unicode/bidi"
)

// maxIDNALabel bounds each label of a domain that needs IDNA (one with a
// code point past ASCII): 255 code points before mapping, four times DNS's
// longest label. Punycode is quadratic in a label's length (16,384 distinct
// code points take 1.7 s), and web.js calls domainToASCII synchronously,
// where the run's deadline cannot interrupt it; past the bound a URL fails
// to parse and says why.
const maxIDNALabel = 255

// errIDNALabel is a label past maxIDNALabel.
var errIDNALabel = errors.New("a host label that needs IDNA is longer than 255 code points")

// uts46 is UTS #46 ToASCII as the URL Standard's "domain to ASCII" sets it
// when not strict: CheckHyphens, UseSTD3ASCIIRules and VerifyDnsLength
// false, CheckJoiners true, nontransitional. CheckBidi is domainToASCII's
// own (checkBidi): x/net's rule applies RFC 5893 to every label of a Bidi
// domain, where the URL Standard's references (WPT's toascii.json, ada in
// Node) hold only its right-to-left labels to it ("1.ي" is a valid host).
var uts46 = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.CheckHyphens(false),
	idna.CheckJoiners(true), idna.StrictDomainName(false), idna.VerifyDNSLength(false))

// domainToASCII is the URL Standard's domain to ASCII (beStrict false) for
// a domain with a code point past ASCII (web.js lowercases an ASCII one
// itself, as the standard says): the ASCII form, or an error. The caller
// checks the result for forbidden domain code points and emptiness.
func domainToASCII(domain string) (string, error) {
	n := 0
	for _, r := range domain {
		if isLabelSeparator(r) {
			n = 0
			continue
		}
		if n++; n > maxIDNALabel {
			return "", errIDNALabel
		}
	}
	ascii, err := uts46.ToASCII(domain)
	if err != nil {
		return "", err
	}
	if err := checkBidi(ascii); err != nil {
		return "", err
	}
	return ascii, nil
}

// isLabelSeparator: the full stops UTS #46 maps to '.'.
func isLabelSeparator(r rune) bool {
	return r == '.' || r == '\u3002' || r == '\uff0e' || r == '\uff61'
}

// checkBidi is UTS #46's CheckBidi over ToASCII's result: in a Bidi domain
// (one with a code point of class R, AL or AN), every right-to-left label
// (one with such a code point) satisfies RFC 5893's rules.
func checkBidi(ascii string) error {
	labels := strings.Split(ascii, ".")
	rtl := make([]bool, len(labels))
	bidiDomain := false
	for i, l := range labels {
		if strings.HasPrefix(l, "xn--") {
			u, err := idna.Punycode.ToUnicode(l)
			if err != nil {
				return err
			}
			labels[i] = u
		}
		rtl[i] = isRTL(labels[i])
		bidiDomain = bidiDomain || rtl[i]
	}
	if !bidiDomain {
		return nil
	}
	for i, l := range labels {
		if rtl[i] && !bidirule.ValidString(l) {
			return errors.New("a right-to-left label breaks the Bidi rule (RFC 5893)")
		}
	}
	return nil
}

// isRTL: s has a code point of bidi class R, AL or AN.
func isRTL(s string) bool {
	for len(s) > 0 {
		p, n := bidi.LookupString(s)
		if n == 0 {
			_, n = utf8.DecodeRuneInString(s)
		}
		switch p.Class() {
		case bidi.R, bidi.AL, bidi.AN:
			return true
		}
		s = s[n:]
	}
	return false
}
