#!/usr/bin/env node
// The "browser" of `baton call --oauth` in the client conformance scenarios (as $BROWSER): it
// opens the authorization URL it is given and follows the redirects, as a person's browser would
// after signing in: the suite's authorization server redirects at once to baton call's loopback
// callback. It prints nothing; a failure shows as baton call waiting for its callback.
const url = process.argv[2];
if (url) await fetch(url, { redirect: 'follow' }).catch(() => {});
