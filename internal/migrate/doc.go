// Package migrate rewrites every stored object of a CustomResourceDefinition
// at its current storage version and then, under a guard, trims
// status.storedVersions to that version: step 4 of the Kubernetes task page
// "Versions in CustomResourceDefinitions" ("upgrade existing objects to a new
// stored version", option 2). See docs/migrate.md.
//
// Each object gets a no-op JSON merge patch that names its metadata.uid and
// metadata.resourceVersion, sent through the storage version:
//
//	{"metadata":{"uid":"<uid>","resourceVersion":"<rv>"}}
//
// The API server decodes the stored object, applies the (empty) change and
// stores it again, encoded at the current storage version; when those bytes
// equal what is stored, the storage layer skips the write and the
// resourceVersion stays — the object was already current. The uid and
// resourceVersion make the patch a precondition: it can never create an
// object (a patch of a missing object is 404), never touch an object
// re-created under the same name, and never overwrite a concurrent write
// (409 Conflict, after which the object is stored at the current version
// anyway). Only metadata is listed, so a 100k-object run reads names and
// versions, not whole objects.
package migrate
