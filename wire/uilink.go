package wire

import "time"

// SignInLink answers POST /v1/ui/sign-in-links (berth ui): a link that
// signs a browser in to the web UI of the master that made it, once,
// until Expires, without a certificate in the browser or the secret
// typed in (as nomad ui -authenticate and Jupyter's token URL do).
type SignInLink struct {
	// URL is the link: the master's /ui/sign-in?code=CODE; without
	// credentials (the loopback mode) the UI itself, which needs none.
	URL string `json:"url"`
	// Expires is when the code stops working (absent: no code).
	Expires *time.Time `json:"expires,omitempty"`
}

// SignInCodeParam is the query parameter (GET /ui/sign-in) and form field
// (POST /ui/sign-in) of a sign-in link's code.
const SignInCodeParam = "code"
