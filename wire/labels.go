package wire

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Labels and constraints (docs/PLACEMENT.md): a worker carries labels
// (--label gpu-model=T4), and an app or driver may ask for workers whose
// labels satisfy every one of its constraints. Declared once here for the
// master, the worker and the CLI.

const (
	MaxLabels          = 32
	MaxConstraints     = 8
	MaxConstraintValue = 32 // values of one constraint's in or notIn
	maxLabelKey        = 63
	maxLabelValue      = 63
)

// labelKey and labelValue are what Kubernetes allows in a label, near
// enough: printable in a status line and a URL, no spaces, no commas (the
// CLI's lists) and no '=' in a key.
var (
	labelKey   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
	labelValue = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
)

// CheckLabelKey checks a label's name.
func CheckLabelKey(k string) error {
	if len(k) > maxLabelKey || !labelKey.MatchString(k) {
		return fmt.Errorf("label %q: want 1 to %d letters, digits, '.', '_', '-' or '/', starting and ending with a letter or digit", clip(k), maxLabelKey)
	}
	return nil
}

// CheckLabelValue checks a label's value (k names the label).
func CheckLabelValue(k, v string) error {
	if len(v) > maxLabelValue || !labelValue.MatchString(v) {
		return fmt.Errorf("label %s: value %q: want 1 to %d letters, digits, '.', '_' or '-', starting and ending with a letter or digit", k, clip(v), maxLabelValue)
	}
	return nil
}

// CheckLabels checks a worker's labels.
func CheckLabels(labels map[string]string) error {
	if len(labels) > MaxLabels {
		return fmt.Errorf("labels: %d, at most %d", len(labels), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if err := CheckLabelKey(k); err != nil {
			return err
		}
		if err := CheckLabelValue(k, labels[k]); err != nil {
			return err
		}
	}
	return nil
}

// ParseLabel reads KEY=VALUE (worker --label).
func ParseLabel(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("label %q: want KEY=VALUE, e.g. gpu-model=T4", clip(s))
	}
	if err := CheckLabelKey(k); err != nil {
		return "", "", err
	}
	return k, v, CheckLabelValue(k, v)
}

// Constraint asks for workers whose label is one of In (the label must be
// set), or is none of NotIn (an unset label satisfies it). One of the two
// is given.
type Constraint struct {
	Label string   `json:"label"`
	In    []string `json:"in,omitempty"`
	NotIn []string `json:"notIn,omitempty"`
}

// Satisfied reports whether a worker with labels satisfies c.
func (c Constraint) Satisfied(labels map[string]string) bool {
	v, ok := labels[c.Label]
	if len(c.In) > 0 {
		return ok && slices.Contains(c.In, v)
	}
	return !ok || !slices.Contains(c.NotIn, v)
}

// String is c as the CLI takes it and a waiting reason tells it:
// "gpu-model in [T4 P100]", "zone not in [b]".
func (c Constraint) String() string {
	if len(c.In) > 0 {
		return fmt.Sprintf("%s in [%s]", c.Label, strings.Join(c.In, " "))
	}
	return fmt.Sprintf("%s not in [%s]", c.Label, strings.Join(c.NotIn, " "))
}

// Satisfies reports whether a worker with labels satisfies every
// constraint.
func Satisfies(labels map[string]string, constraints []Constraint) bool {
	for _, c := range constraints {
		if !c.Satisfied(labels) {
			return false
		}
	}
	return true
}

// CheckConstraints checks a description's constraints: each names a
// valid label and gives values to In or to NotIn (not both, not none).
func CheckConstraints(cs []Constraint) error {
	if len(cs) > MaxConstraints {
		return fmt.Errorf("constraints: %d, at most %d", len(cs), MaxConstraints)
	}
	for i, c := range cs {
		if err := CheckLabelKey(c.Label); err != nil {
			return fmt.Errorf("constraints[%d]: %w", i, err)
		}
		values := c.In
		switch {
		case len(c.In) > 0 && len(c.NotIn) > 0:
			return fmt.Errorf("constraints[%d] (%s): give in or notIn, not both", i, c.Label)
		case len(c.In) == 0 && len(c.NotIn) == 0:
			return fmt.Errorf("constraints[%d] (%s): give the values in \"in\" or \"notIn\"", i, c.Label)
		case len(c.NotIn) > 0:
			values = c.NotIn
		}
		if len(values) > MaxConstraintValue {
			return fmt.Errorf("constraints[%d] (%s): %d values, at most %d", i, c.Label, len(values), MaxConstraintValue)
		}
		for _, v := range values {
			if err := CheckLabelValue(c.Label, v); err != nil {
				return fmt.Errorf("constraints[%d]: %w", i, err)
			}
		}
	}
	return checkSatisfiable(cs)
}

// checkSatisfiable refuses constraints no worker's labels could ever
// satisfy together (zone in [a] and zone in [b]; zone in [a] and zone
// notIn [a]): such an app would wait for ever.
func checkSatisfiable(cs []Constraint) error {
	allowed := map[string][]string{} // label → the values every "in" allows
	for _, c := range cs {
		if len(c.In) == 0 {
			continue
		}
		if prev, ok := allowed[c.Label]; ok {
			allowed[c.Label] = slices.DeleteFunc(slices.Clone(prev), func(v string) bool { return !slices.Contains(c.In, v) })
		} else {
			allowed[c.Label] = slices.Clone(c.In)
		}
	}
	for _, c := range cs {
		if vs, ok := allowed[c.Label]; ok && len(c.NotIn) > 0 {
			allowed[c.Label] = slices.DeleteFunc(vs, func(v string) bool { return slices.Contains(c.NotIn, v) })
		}
	}
	for _, label := range slices.Sorted(maps.Keys(allowed)) {
		if len(allowed[label]) == 0 {
			return fmt.Errorf("constraints on %s can never hold together: no value is in every \"in\" and in no \"notIn\"", label)
		}
	}
	return nil
}

// ParseConstraint reads the CLI's --constraint: KEY=V1,V2 (the label is
// one of the values) or KEY!=V1,V2 (it is none of them).
func ParseConstraint(s string) (Constraint, error) {
	k, vs, ok := strings.Cut(s, "=")
	if !ok || vs == "" {
		return Constraint{}, fmt.Errorf("constraint %q: want LABEL=V1,V2 or LABEL!=V1,V2, e.g. gpu-model=T4,P100", clip(s))
	}
	c := Constraint{Label: k, In: strings.Split(vs, ",")}
	if base, neg := strings.CutSuffix(k, "!"); neg {
		c = Constraint{Label: base, NotIn: c.In}
	}
	return c, CheckConstraints([]Constraint{c})
}

// LabelList is labels as a status line shows them: k=v, sorted by key.
func LabelList(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, ",")
}

// clip shortens what an error quotes back.
func clip(s string) string { return Clip(s, MaxEchoBytes) }
