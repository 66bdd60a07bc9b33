"""A PodResources v1 client for tests: what a node agent calls on
`<kubelet root>/pod-resources/kubelet.sock`."""

from __future__ import annotations

import grpc

from draemu.kubeletapi import podresources as pr


class PodResourcesClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.list = channel.unary_unary(
            pr.LIST, request_serializer=pr.ListPodResourcesRequest.SerializeToString,
            response_deserializer=pr.ListPodResourcesResponse.FromString)
        self.get = channel.unary_unary(
            pr.GET, request_serializer=pr.GetPodResourcesRequest.SerializeToString,
            response_deserializer=pr.GetPodResourcesResponse.FromString)
        self.get_allocatable_resources = channel.unary_unary(
            pr.GET_ALLOCATABLE_RESOURCES,
            request_serializer=pr.AllocatableResourcesRequest.SerializeToString,
            response_deserializer=pr.AllocatableResourcesResponse.FromString)
