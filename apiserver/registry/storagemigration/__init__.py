"""storagemigration.k8s.io/v1 StorageVersionMigration."""
