// Package config owns the service's start-up configuration: the flags, the
// ALFRED_* environment variables and the optional file, their defaults, and
// their validation. A wrong value stops the start with a message that names the
// setting and what it accepts.
//
// It imports no other Alfred package: it knows no forge kind, forges/setup
// gives Load the kinds (ForgeKind).
package config
