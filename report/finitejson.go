package report

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// marshalFinite is json.MarshalIndent that writes every non-finite float
// (NaN, ±Inf) as null instead of failing. encoding/json refuses them, and a
// manifest gathers float fields from every stage (Θ_min slack is +Inf when
// no prefix was checked, C∞ when a policy leaves the logs, a planner's tree
// size past 10^308), so one missed field would lose a whole run after all
// the work. Field order, json tags, omitempty and json.Marshaler values
// (Float, time.Time) are honoured.
func marshalFinite(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeFinite(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func encodeFinite(buf *bytes.Buffer, v reflect.Value) error {
	if !v.IsValid() {
		buf.WriteString("null")
		return nil
	}
	if v.Type().Implements(marshalerType) && !(v.Kind() == reflect.Pointer && v.IsNil()) {
		b, err := json.Marshal(v.Interface())
		buf.Write(b)
		return err
	}
	if done, err := encodeKind(buf, v); done {
		return err
	}
	b, err := json.Marshal(v.Interface())
	buf.Write(b)
	return err
}

// encodeKind writes the kinds whose values may hold a non-finite float
// (done false: any other kind, and []byte, which encoding/json writes as
// base64).
func encodeKind(buf *bytes.Buffer, v reflect.Value) (done bool, err error) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		encodeFloat(buf, v)
		return true, nil
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return true, nil
		}
		return true, encodeFinite(buf, v.Elem())
	case reflect.Struct:
		return true, encodeStruct(buf, v)
	case reflect.Map:
		return true, encodeMap(buf, v)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			buf.WriteString("null")
			return true, nil
		}
		if v.Type().Elem().Kind() != reflect.Uint8 {
			return true, encodeList(buf, v)
		}
	}
	return false, nil
}

func encodeStruct(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('{')
	first := true
	if err := encodeFields(buf, v, &first); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

// encodeFields writes v's fields, those of untagged embedded structs
// inline (as encoding/json does).
func encodeFields(buf *bytes.Buffer, v reflect.Value, first *bool) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		name, omitEmpty, ok := fieldKey(f)
		if !ok {
			continue
		}
		if name == "" && f.Anonymous && fv.Kind() == reflect.Struct {
			if err := encodeFields(buf, fv, first); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if omitEmpty && fv.IsZero() {
			continue
		}
		if !*first {
			buf.WriteByte(',')
		}
		*first = false
		if err := encodeEntry(buf, name, fv); err != nil {
			return err
		}
	}
	return nil
}

// fieldKey is a struct field's JSON name ("" when the tag gives none)
// and whether it has omitempty; ok is false for a field encoding/json
// leaves out (unexported, or tagged "-").
func fieldKey(f reflect.StructField) (name string, omitEmpty, ok bool) {
	if !f.IsExported() {
		return "", false, false
	}
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" && opts == "" {
		return "", false, false
	}
	return name, strings.Contains(","+opts+",", ",omitempty,"), true
}

// encodeEntry writes "name":value.
func encodeEntry(buf *bytes.Buffer, name string, v reflect.Value) error {
	key, _ := json.Marshal(name)
	buf.Write(key)
	buf.WriteByte(':')
	return encodeFinite(buf, v)
}

func encodeMap(buf *bytes.Buffer, v reflect.Value) error {
	if v.IsNil() {
		buf.WriteString("null")
		return nil
	}
	keys := v.MapKeys()
	names, order := mapKeyOrder(keys)
	buf.WriteByte('{')
	for j, i := range order {
		if j > 0 {
			buf.WriteByte(',')
		}
		if err := encodeEntry(buf, names[i], v.MapIndex(keys[i])); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// mapKeyOrder is each map key as encoding/json names it, and the keys'
// indices in the order of those names.
func mapKeyOrder(keys []reflect.Value) (names []string, order []int) {
	names = make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.String()
		if k.Kind() != reflect.String {
			b, _ := json.Marshal(k.Interface())
			names[i] = strings.Trim(string(b), `"`)
		}
	}
	order = make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return names[order[a]] < names[order[b]] })
	return names, order
}

// encodeFloat writes a float as encoding/json would, or null when it is
// not finite.
func encodeFloat(buf *bytes.Buffer, v reflect.Value) {
	x := v.Float()
	if math.IsNaN(x) || math.IsInf(x, 0) {
		buf.WriteString("null")
		return
	}
	buf.WriteString(strconv.FormatFloat(x, 'g', -1, v.Type().Bits()))
}

// encodeList writes a slice or array as a JSON array of its elements.
func encodeList(buf *bytes.Buffer, v reflect.Value) error {
	buf.WriteByte('[')
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := encodeFinite(buf, v.Index(i)); err != nil {
			return err
		}
	}
	buf.WriteByte(']')
	return nil
}
