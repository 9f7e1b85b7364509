package rank

import (
	"errors"
	"strings"
	"testing"
)

func TestValidCountry(t *testing.T) {
	t.Parallel()
	n := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			if ValidCountry(string([]rune{a, b})) {
				n++
			}
		}
	}
	if n != 249 {
		t.Fatalf("%d assigned codes, want 249", n)
	}
	for _, s := range []string{"FR", "US", "JP", "AX", "SS", "BQ", "ZW"} {
		if !ValidCountry(s) {
			t.Errorf("ValidCountry(%q) = false", s)
		}
	}
	// Two letters that are not assigned, lower case, reserved or exceptional.
	for _, s := range []string{"XX", "ZZ", "fr", "Fr", "UK", "EU", "AN", "YU", "XK", "F", "FRA", " F", "AA"} {
		if ValidCountry(s) {
			t.Errorf("ValidCountry(%q) = true", s)
		}
	}
}

func TestParseProfile(t *testing.T) {
	t.Parallel()
	p, err := ParseProfile([]byte(` {"name":"Alice","avatar":"https://cdn.example/a.png","country":"FR"} `))
	if err != nil || p != (Profile{Name: "Alice", Avatar: "https://cdn.example/a.png", Country: "FR"}) {
		t.Fatalf("ParseProfile = %+v, %v", p, err)
	}
	if p, err := ParseProfile([]byte(`{"name":"Zoe\u0308"}`)); err != nil || p.Name != "Zo\u00eb" {
		t.Fatalf("a decomposed name is stored in NFC: %+v, %v", p, err)
	}
	if p, err := ParseProfile([]byte(`{"country":"SE"}`)); err != nil || p != (Profile{Country: "SE"}) {
		t.Fatalf("one field: %+v, %v", p, err)
	}
	cases := []struct{ body, field string }{
		{`{"name":""}`, "name"},
		{`{"name":"` + strings.Repeat("a", 33) + `"}`, "name"},
		{`{"name":"a\u0000b"}`, "name"},
		{`{"name":"a\u202eb"}`, "name"},
		{`{"name":"Alice\ufe0f"}`, "name"},
		{`{"name":"Alice\u17b4"}`, "name"},
		{`{"name":12}`, "name"},
		{`{"name":null}`, "name"},
		{`{"name":"A","name":"B"}`, "name"},
		{`{"avatar":"http://x.example/a.png"}`, "avatar"},
		{`{"avatar":"javascript:alert(1)"}`, "avatar"},
		{`{"avatar":"https://"}`, "avatar"},
		{`{"avatar":"https://u:p@x.example/a"}`, "avatar"},
		{`{"avatar":"https://x.example/a b"}`, "avatar"},
		{`{"avatar":"https://x.example/` + strings.Repeat("a", 250) + `"}`, "avatar"},
		{`{"avatar":"//x.example/a.png"}`, "avatar"},
		{`{"country":"fr"}`, "country"},
		{`{"country":"XX"}`, "country"},
		{`{"country":"FRA"}`, "country"},
		{`{"Country":"FR"}`, "Country"},
		{`{"email":"a@b"}`, "email"},
	}
	for _, c := range cases {
		_, err := ParseProfile([]byte(c.body))
		if !errors.Is(err, ErrInvalidProfile) || !strings.Contains(err.Error(), "field "+c.field) {
			t.Errorf("ParseProfile(%s) = %v, want ErrInvalidProfile naming field %s", c.body, err, c.field)
		}
	}
	for _, body := range []string{``, `[]`, `"x"`, `{}`, `{"name":"A"} {}`, `{"name":"A"`, `{"name":"A"}x`} {
		if _, err := ParseProfile([]byte(body)); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("ParseProfile(%q) = %v, want ErrInvalidProfile", body, err)
		}
	}
}
