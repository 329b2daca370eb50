"""CustomResourceDefinitions: what apiextensions-apiserver does with their schemas and custom resources (pure)."""
