"""Strategies of the storage.k8s.io/v1 kinds: StorageClass, CSIDriver, CSINode,
CSIStorageCapacity, VolumeAttachment, VolumeAttributesClass."""
