//go:build cgo

package codemode

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// Declarations renders the APIs as compact, valid TypeScript a model can
// call from: per tool a named input type (and output type, when Returns is
// set), then `declare function name(args: NameInput): NameOutput;` (the
// Promise<…> form for async tools), with JSDoc from the tool's and every
// property's description. Enums and const are quoted literal unions,
// `$ref`s into `$defs` (or `definitions`) named types (a recursive one stays
// named), oneOf/anyOf unions, allOf intersections, nullable and type
// arrays unions with null, prefixItems tuples, additionalProperties an
// index signature; formats, bounds and patterns are JSDoc tags. Type
// names are prefixed with the tool's, so two tools' inputs never collide.
// A tool that takes no input (an object schema with no properties and
// nothing else that admits any: `{}`, {"type":"object"},
// {"type":"object","properties":{}}, the MCP SDKs' schema of a tool without
// arguments) is declared with no parameter, `name()`; a call without an
// argument sends {}, which its schema accepts (a tool without Parameters
// keeps `args: NameInput`, NameInput = {}). A default is its JSON
// literal (arrays and objects too) when that is at most 100 bytes, and
// left out when longer. The output is deterministic: tools in the order
// given, properties in schema order.
func Declarations(apis []ToolAPI) string {
	var b strings.Builder
	used := map[string]bool{}
	for i, api := range apis {
		if i > 0 {
			b.WriteByte('\n')
		}
		d := &declarer{prefix: typePrefix(api.JSName, used), named: map[string]string{}}
		params := ""
		if sch := parseOrdered(api.Parameters); !noInput(sch) {
			params = "args: " + d.named1("Input", sch, true)
		}
		out := "unknown"
		if len(strings.TrimSpace(string(api.Returns))) > 0 {
			out = d.named1("Output", parseOrdered(api.Returns), false)
		}
		for _, t := range d.types {
			b.WriteString(t)
		}
		writeDoc(&b, "", strings.TrimSpace(api.Description), nil)
		if api.Async {
			out = "Promise<" + out + ">"
		}
		fmt.Fprintf(&b, "declare function %s(%s): %s;\n", api.JSName, params, out)
	}
	return b.String()
}

// declarer renders one tool's types.
type declarer struct {
	prefix string
	root   *ordered          // the schema being rendered: where its $refs point
	named  map[string]string // $ref -> type name
	types  []string          // rendered named types, in order
}

// typePrefix is a tool's type-name prefix: its name in PascalCase (every
// character that is no letter or digit a word break), made unique among
// the tools.
func typePrefix(name string, used map[string]bool) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r): // '_', '$', '-', and what no identifier holds (a provider tool's name may be any text)
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	p := b.String()
	if p == "" || !unicode.IsLetter([]rune(p)[0]) {
		p = "T" + p
	}
	base := p
	for i := 2; used[p]; i++ {
		p = fmt.Sprintf("%s%d", base, i)
	}
	used[p] = true
	return p
}

// named1 renders the top schema as the named type prefix+suffix.
func (d *declarer) named1(suffix string, s *ordered, args bool) string {
	name := d.prefix + suffix
	d.root = s
	body := "{}"
	if s != nil {
		body = d.ts(s, "")
	} else if !args {
		body = "unknown"
	}
	if args && s != nil && body == "unknown" {
		body = "Record<string, unknown>"
	}
	var b strings.Builder
	writeDoc(&b, "", s.get("description").str(), nil)
	fmt.Fprintf(&b, "type %s = %s;\n", name, body)
	d.types = append(d.types, b.String())
	return name
}

// ts renders a schema as a TypeScript type at the given indent.
func (d *declarer) ts(s *ordered, indent string) string {
	if s == nil {
		return "unknown"
	}
	if !s.object {
		if b, ok := s.scalar.(bool); ok && !b {
			return "never"
		}
		return "unknown"
	}
	if ref := s.get("$ref").str(); ref != "" {
		return d.ref(ref)
	}
	var t string
	switch {
	case s.get("const") != nil:
		t = literal(s.get("const"))
	case s.get("enum") != nil && s.get("enum").array:
		var lits []string
		for _, v := range s.get("enum").items {
			lits = append(lits, literal(v))
		}
		t = union(lits)
	case s.get("oneOf") != nil || s.get("anyOf") != nil:
		list := s.get("oneOf")
		if list == nil {
			list = s.get("anyOf")
		}
		var ts []string
		for _, v := range list.items {
			ts = append(ts, d.ts(v, indent))
		}
		t = union(ts)
	case s.get("allOf") != nil:
		var ts []string
		for _, v := range s.get("allOf").items {
			ts = append(ts, paren(d.ts(v, indent)))
		}
		t = strings.Join(dedupe(ts), " & ")
		if len(ts) == 0 {
			t = "unknown"
		}
	default:
		t = d.typed(s, indent)
	}
	if n := s.get("nullable"); n != nil && n.scalar == true && t != "unknown" {
		t = union([]string{t, "null"})
	}
	return t
}

// typed renders a schema by its "type" (a string or a list).
func (d *declarer) typed(s *ordered, indent string) string {
	tt := s.get("type")
	var types []string
	switch {
	case tt == nil:
		switch {
		case s.get("properties") != nil || s.get("additionalProperties") != nil:
			types = []string{"object"}
		case s.get("items") != nil || s.get("prefixItems") != nil:
			types = []string{"array"}
		}
	case tt.array:
		for _, v := range tt.items {
			types = append(types, v.str())
		}
	default:
		types = []string{tt.str()}
	}
	if len(types) == 0 {
		return "unknown"
	}
	var out []string
	for _, t := range types {
		switch t {
		case "string":
			out = append(out, "string")
		case "number", "integer":
			out = append(out, "number")
		case "boolean":
			out = append(out, "boolean")
		case "null":
			out = append(out, "null")
		case "array":
			out = append(out, d.array(s, indent))
		case "object":
			out = append(out, d.object(s, indent))
		default:
			out = append(out, "unknown")
		}
	}
	return union(out)
}

func (d *declarer) array(s *ordered, indent string) string {
	if p := s.get("prefixItems"); p != nil && p.array {
		var ts []string
		for _, v := range p.items {
			ts = append(ts, d.ts(v, indent))
		}
		return "[" + strings.Join(ts, ", ") + "]"
	}
	items := s.get("items")
	if items != nil && items.array { // draft 4-7 tuples
		var ts []string
		for _, v := range items.items {
			ts = append(ts, d.ts(v, indent))
		}
		return "[" + strings.Join(ts, ", ") + "]"
	}
	if items == nil {
		return "unknown[]"
	}
	return arrayOf(d.ts(items, indent))
}

func (d *declarer) object(s *ordered, indent string) string {
	props := s.get("properties")
	extra := s.get("additionalProperties")
	var rest string // the index type, if any
	if extra != nil {
		switch {
		case extra.object:
			rest = d.ts(extra, indent)
		case extra.scalar == true:
			rest = "unknown"
		}
	}
	if props == nil || !props.object || len(props.keys) == 0 {
		if rest != "" {
			return record(rest)
		}
		if extra != nil && extra.scalar == false {
			return "{}"
		}
		return "Record<string, unknown>"
	}
	required := map[string]bool{}
	if r := s.get("required"); r != nil {
		for _, v := range r.items {
			required[v.str()] = true
		}
	}
	inner := indent + "  "
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range props.keys {
		p := props.fields[k]
		writeDoc(&b, inner, p.get("description").str(), tags(p))
		opt := "?"
		if required[k] {
			opt = ""
		}
		fmt.Fprintf(&b, "%s%s%s: %s;\n", inner, propName(k), opt, d.ts(p, inner))
	}
	b.WriteString(indent + "}")
	if rest != "" {
		return b.String() + " & " + record(rest)
	}
	return b.String()
}

// record is an object of any keys whose values are t: an index signature,
// which (unlike Record<string, t>) may refer to the type being declared.
func record(t string) string {
	if t == "unknown" {
		return "Record<string, unknown>"
	}
	return "{ [key: string]: " + t + " }"
}

// ref names the type a $ref points at, rendering it on first use.
func (d *declarer) ref(ref string) string {
	if name, ok := d.named[ref]; ok {
		return name
	}
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return "unknown" // outside the schema: nothing to name
	}
	node := d.lookup(ref)
	if node == nil {
		return "unknown"
	}
	// A chain of bare $refs that comes back to itself names nothing (as a
	// type alias it would refer to itself, which TypeScript refuses).
	seen := map[string]bool{ref: true}
	for n := node; n.get("$ref") != nil && len(n.keys) == 1; {
		next := n.get("$ref").str()
		if seen[next] {
			d.named[ref] = "unknown"
			return "unknown"
		}
		seen[next] = true
		n = d.lookup(next)
		if n == nil {
			break
		}
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	name := d.prefix + typePrefix(last, map[string]bool{})
	for taken := true; taken; {
		taken = false
		for _, n := range d.named {
			if n == name {
				name += "_"
				taken = true
			}
		}
	}
	d.named[ref] = name // before rendering: a recursive type refers to its name
	var b strings.Builder
	writeDoc(&b, "", node.get("description").str(), nil)
	fmt.Fprintf(&b, "type %s = %s;\n", name, d.ts(node, ""))
	d.types = append(d.types, b.String())
	return name
}

// lookup is the node a local $ref points at, or nil.
func (d *declarer) lookup(ref string) *ordered {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	node := d.root
	for _, part := range strings.Split(path, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		node = node.get(part)
	}
	return node
}

// tags are a property's JSDoc tags: its format, bounds, pattern, default.
func tags(p *ordered) []string {
	var out []string
	for _, k := range []string{"format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
		"minLength", "maxLength", "pattern", "minItems", "maxItems"} {
		if v := p.get(k); v != nil && !v.object && !v.array {
			out = append(out, fmt.Sprintf("@%s %v", k, v.scalar))
		}
	}
	if v := p.get("default"); v != nil {
		var b strings.Builder
		if writeJSON(&b, v, maxDefault) {
			out = append(out, "@default "+b.String())
		}
	}
	return out
}

// maxDefault bounds a @default tag's literal, in bytes: past it the tag is
// left out (a cut literal is nothing a model can copy).
const maxDefault = 100

// writeJSON writes v as compact JSON, keys in schema order, without HTML
// escaping; false when it would exceed limit bytes (what was written is
// then to be discarded). v's depth is bounded by parseOrdered.
func writeJSON(b *strings.Builder, v *ordered, limit int) bool {
	switch {
	case v == nil:
		b.WriteString("null")
	case v.object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(k))
			b.WriteByte(':')
			if !writeJSON(b, v.fields[k], limit) {
				return false
			}
		}
		b.WriteByte('}')
	case v.array:
		b.WriteByte('[')
		for i, e := range v.items {
			if i > 0 {
				b.WriteByte(',')
			}
			if !writeJSON(b, e, limit) {
				return false
			}
		}
		b.WriteByte(']')
	default:
		b.WriteString(literal(v))
	}
	return b.Len() <= limit
}

// jsonString is s as a JSON string, without HTML escaping (a model copies
// "<a>", not "\u003ca\u003e").
func jsonString(s string) string {
	b, _ := marshal(s)
	return string(b)
}

// noInput reports whether a tool's parsed Parameters take no input: an
// object schema whose only keywords are annotations, type "object", an
// empty properties or required, and additionalProperties false. Anything
// else that could admit a property (additionalProperties true or a
// schema, patternProperties, $ref, combinators...) takes input, and so
// does a tool without Parameters (unknown, not empty: it keeps its
// parameter, of the type {}).
func noInput(s *ordered) bool {
	if s == nil || !s.object {
		return false // unreadable, or a boolean schema
	}
	for _, k := range s.keys {
		v := s.fields[k]
		switch k {
		case "type":
			if v.str() != "object" {
				return false
			}
		case "properties":
			if !v.object || len(v.keys) > 0 {
				return false
			}
		case "required":
			if !v.array || len(v.items) > 0 {
				return false
			}
		case "additionalProperties":
			if v.object || v.array || v.scalar != false {
				return false
			}
		case "$schema", "$id", "$comment", "title", "description", "examples", "default":
		default:
			return false
		}
	}
	return true
}

// writeDoc writes a JSDoc comment, if there is anything to say.
func writeDoc(b *strings.Builder, indent, text string, tags []string) {
	text = strings.ReplaceAll(strings.TrimSpace(text), "*/", "*\\/")
	if text == "" && len(tags) == 0 {
		return
	}
	lines := strings.Split(text, "\n")
	if text == "" {
		lines = nil
	}
	for i := range tags {
		tags[i] = strings.ReplaceAll(tags[i], "*/", "*\\/")
	}
	lines = append(lines, tags...)
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, lines[0])
		return
	}
	b.WriteString(indent + "/**\n")
	for _, l := range lines {
		fmt.Fprintf(b, "%s * %s\n", indent, strings.TrimRight(l, " \t\r"))
	}
	b.WriteString(indent + " */\n")
}

// literal renders a JSON value as a TypeScript literal type.
func literal(v *ordered) string {
	switch {
	case v == nil:
		return "unknown"
	case v.num:
		return v.scalar.(string)
	case v.object || v.array:
		return "unknown"
	}
	switch x := v.scalar.(type) {
	case string:
		return jsonString(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return "null"
}

// union joins types with |, dropping repeats; "unknown" absorbs the rest.
func union(ts []string) string {
	ts = dedupe(ts)
	for _, t := range ts {
		if t == "unknown" {
			return "unknown"
		}
	}
	switch len(ts) {
	case 0:
		return "never"
	case 1:
		return ts[0]
	}
	return strings.Join(ts, " | ")
}

func dedupe(ts []string) []string {
	seen := map[string]bool{}
	out := ts[:0:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// paren wraps a union or an intersection for use inside another type.
func paren(t string) string {
	if hasTop(t) {
		return "(" + t + ")"
	}
	return t
}

// arrayOf is T[], parenthesised where T needs it.
func arrayOf(t string) string { return paren(t) + "[]" }

// hasTop says whether t is a union or an intersection at its top level
// (outside braces, brackets, parentheses, angle brackets and strings).
func hasTop(t string) bool {
	depth := 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; c {
		case '{', '[', '(', '<':
			depth++
		case '}', ']', ')', '>':
			depth--
		case '"':
			for i++; i < len(t) && t[i] != '"'; i++ {
				if t[i] == '\\' {
					i++
				}
			}
		case '|', '&':
			if depth == 0 {
				return true
			}
		}
	}
	return false
}

// propName quotes a property name that is not an identifier.
func propName(k string) string {
	ident := k != ""
	for i, r := range k {
		if !(r == '_' || r == '$' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			ident = false
			break
		}
	}
	if ident {
		return k
	}
	b, _ := json.Marshal(k)
	return string(b)
}

// ProviderDeclarations renders providers as TypeScript a model can call
// from: per provider `declare const name: { tool(...): Promise<Result>; … }`
// in its calling convention (one options object with ObjectArgs, else
// positional parameters from the Params array schema's prefixItems), with
// the types named per provider and tool, JSDoc from the descriptions; a
// tool in Tools without an APIs entry (or without Params) takes any
// arguments (with ObjectArgs, an optional options object) and returns
// unknown; a provider that lists no tool is declared as any tool's
// namespace. [ProviderExample] is the example call to show with them. A tool
// of an ObjectArgs provider (or a positional one whose Params is an object
// schema) that takes no input (see [Declarations]) has no parameter.
func ProviderDeclarations(providers []Provider) string {
	var b strings.Builder
	used := map[string]bool{}
	for i, p := range providers {
		if i > 0 {
			b.WriteByte('\n')
		}
		described := map[string]bool{}
		var members strings.Builder
		for _, t := range p.APIs {
			described[t.Name] = true
			d := &declarer{prefix: typePrefix(p.Name+"_"+t.Name, used), named: map[string]string{}}
			params := unknownParams(p.ObjectArgs)
			if sch := parseOrdered(t.Params); sch != nil {
				if p.ObjectArgs {
					params = ""
					if !noInput(sch) {
						params = "args: " + d.named1("Input", sch, true)
					}
				} else {
					params = d.positional(sch)
				}
			}
			out := "unknown"
			if len(strings.TrimSpace(string(t.Returns))) > 0 {
				out = d.named1("Output", parseOrdered(t.Returns), false)
			}
			for _, ty := range d.types {
				b.WriteString(ty)
			}
			writeDoc(&members, "  ", t.Description, nil)
			fmt.Fprintf(&members, "  %s(%s): Promise<%s>;\n", propName(t.Name), params, out)
		}
		for _, name := range p.Tools {
			if !described[name] {
				described[name] = true
				fmt.Fprintf(&members, "  %s(%s): Promise<unknown>;\n", propName(name), unknownParams(p.ObjectArgs))
			}
		}
		if members.Len() == 0 { // no tool listed: the dispatch serves whichever it has
			fmt.Fprintf(&b, "declare const %s: { [tool: string]: (%s) => Promise<unknown> };\n", p.Name, unknownParams(p.ObjectArgs))
			continue
		}
		fmt.Fprintf(&b, "declare const %s: {\n%s};\n", p.Name, members.String())
	}
	return b.String()
}

// unknownParams are the parameters of a tool with no schema: one
// optional options object for an ObjectArgs provider, else any arguments.
func unknownParams(objectArgs bool) string {
	if objectArgs {
		return "args?: Record<string, unknown>"
	}
	return "...args: unknown[]"
}

// ProviderExample is the example call ProviderDeclarations' readers are
// shown: the first tool that takes arguments (else the first tool), called
// as its declaration says, with placeholders for its required arguments,
// awaited; "" when the providers have no tool. It runs as written against
// tools that accept the placeholders.
func ProviderExample(providers []Provider) string {
	call := ""
	for _, p := range providers {
		for _, t := range p.APIs {
			sch := parseOrdered(t.Params)
			args := providerExampleArgs(p.ObjectArgs, sch)
			if args != "" {
				return exampleText(member(p.Name, t.Name) + "(" + args + ")")
			}
			if call == "" {
				call = member(p.Name, t.Name) + "()"
			}
		}
		if call == "" && len(p.Tools) > 0 {
			call = member(p.Name, p.Tools[0]) + "()"
		}
	}
	if call == "" {
		return ""
	}
	return exampleText(call)
}

func exampleText(call string) string { return "Example:\nconst r = await " + call + ";\nreturn r;" }

// member is a tool of namespace ns as an expression: ns.name, or
// ns["name"] for a name that is no identifier.
func member(ns, name string) string {
	if propName(name) == name {
		return ns + "." + name
	}
	return ns + "[" + jsonString(name) + "]"
}

// providerExampleArgs are the placeholder arguments of a provider tool's
// call: its options object's required keys, or its positional parameters
// up to the last required one; "" when it needs none.
func providerExampleArgs(objectArgs bool, s *ordered) string {
	if s == nil {
		return ""
	}
	items := s.get("prefixItems")
	if objectArgs || items == nil || !items.array {
		if noInput(s) || s.get("required") == nil {
			return ""
		}
		return exampleArgs(s)
	}
	min := len(items.items)
	if m := s.get("minItems"); m != nil && m.num {
		fmt.Sscan(m.scalar.(string), &min)
	}
	var ps []string
	for i := 0; i < min && i < len(items.items); i++ {
		ps = append(ps, placeholder(items.items[i]))
	}
	return strings.Join(ps, ", ")
}
func (d *declarer) positional(s *ordered) string {
	d.root = s
	items := s.get("prefixItems")
	if items == nil || !items.array {
		if s.get("type").str() == "object" || s.get("properties") != nil {
			if noInput(s) {
				return ""
			}
			return "args: " + d.named1("Input", s, true)
		}
		return "...args: unknown[]"
	}
	min := len(items.items)
	if m := s.get("minItems"); m != nil && m.num {
		fmt.Sscan(m.scalar.(string), &min)
	}
	var ps []string
	for i, it := range items.items {
		name := it.get("title").str()
		if propName(name) != name || name == "" || jsReservedWords[name] {
			name = fmt.Sprintf("arg%d", i)
		}
		opt := ""
		if i >= min {
			opt = "?"
		}
		ps = append(ps, name+opt+": "+d.ts(it, "  "))
	}
	return strings.Join(ps, ", ")
}
