// Package ghaction holds the test of the repository's GitHub Action
// (action.yml and .github/action/*.sh): it runs the action's steps on this
// machine the way a GitHub runner runs a composite action. The package has
// no code of its own.
package ghaction
