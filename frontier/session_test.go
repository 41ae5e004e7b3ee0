package frontier

import "testing"

func TestCanonicalizeStripsSessionParams(t *testing.T) {
	const hex32 = "0123456789abcdef0123456789ABCDEF"
	tests := []struct {
		name, in, want string
	}{
		{"jsessionid query", "http://h/a?jsessionid=XYZ&x=1", "http://h/a?x=1"},
		{"JSESSIONID upper case", "http://h/a?x=1&JSESSIONID=1a2b", "http://h/a?x=1"},
		{"phpsessid only", "http://h/a?PHPSESSID=abc", "http://h/a"},
		{"aspsessionid with suffix", "http://h/a?ASPSESSIONIDQSCQRDTA=KJH&b=2", "http://h/a?b=2"},
		{"cfid and cftoken", "http://h/a?CFID=1234&CFTOKEN=5678&page=3", "http://h/a?page=3"},
		{"sessionid", "http://h/?sessionid=1", "http://h/"},
		{"session_id", "http://h/x?a=1&session_id=q&b=2", "http://h/x?a=1&b=2"},
		{"escaped name", "http://h/a?%6Asessionid=1&y=2", "http://h/a?y=2"},
		{"sid hex token", "http://h/a?sid=" + hex32 + "&p=1", "http://h/a?p=1"},
		{"sid alnum token", "http://h/a?sid=k3j4h5g6f7d8s9a0", "http://h/a"},
		{"sid short kept", "http://h/a?sid=42", "http://h/a?sid=42"},
		{"sid numeric kept", "http://h/a?sid=12345678901234567890", "http://h/a?sid=12345678901234567890"},
		{"sid word kept", "http://h/a?sid=sportsandentertainment", "http://h/a?sid=sportsandentertainment"},
		{"sid with dash kept", "http://h/a?sid=ab12-cd34-ef56-gh78", "http://h/a?sid=ab12-cd34-ef56-gh78"},
		{"SID token upper case", "http://h/a?SID=" + hex32, "http://h/a"},
		{"similar names kept", "http://h/a?jsessionidx=1&xsid=" + hex32 + "&sessions=2", "http://h/a?jsessionidx=1&xsid=" + hex32 + "&sessions=2"},
		{"path param", "http://h/shop/cart;jsessionid=A1B2C3?x=1", "http://h/shop/cart?x=1"},
		{"path param upper case", "http://h/shop/cart;JSESSIONID=A1B2C3", "http://h/shop/cart"},
		{"path param in a middle segment", "http://h/a;jsessionid=1/b", "http://h/a/b"},
		{"path param among others", "http://h/a;v=2;jsessionid=1;w=3", "http://h/a;v=2;w=3"},
		{"path param at root", "http://h/;jsessionid=1", "http://h/"},
		{"other path params kept", "http://h/a;v=2", "http://h/a;v=2"},
		{"escaped semicolon is not a path param", "http://h/a%3Bjsessionid=1", "http://h/a%3Bjsessionid=1"},
		{"both forms", "http://h/a;jsessionid=1?JSESSIONID=1&q=x", "http://h/a?q=x"},
		{"empty pieces kept when nothing stripped", "http://h/a?x=1&&y=2", "http://h/a?x=1&&y=2"},
		{"order kept", "http://h/a?z=1&phpsessid=2&a=3", "http://h/a?z=1&a=3"},
		// A stripped parameter can leave a dot segment, which is resolved
		// as the server resolves it (the canonical form stays idempotent,
		// and scope and robots.txt see the path that is fetched).
		{"dot-dot left by a stripped param", "http://h/a/..;jsessionid=1/b", "http://h/b"},
		{"dot left by a stripped param", "http://h/a/.;jsessionid=1/b", "http://h/a/b"},
		{"encoded dot-dot left by a stripped param", "http://h/allowed/%2e%2e;jsessionid=x/secret", "http://h/secret"},
		{"dot-dot with a query", "http://h/a/b/..;JSESSIONID=1?q=1", "http://h/a/?q=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonicalize(tt.in, nil)
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Canonicalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
			canonCheckOutput(t, tt.in, got)
		})
	}
}
