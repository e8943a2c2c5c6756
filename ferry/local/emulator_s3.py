"""The AWS emulator's S3 answers what AWS's does where moto 5.2 differs.

- ``GetBucketNotificationConfiguration`` names ``EventBridgeConfiguration`` when the bucket
  sends its events to EventBridge (moto stores it, and sends events, but leaves it out of
  the answer): ``ferry doctor`` reads it to tell whether a trigger bucket's events arrive.
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    from moto.core.responses import ActionResult
    from moto.s3.responses import S3Response

    answer = S3Response.get_bucket_notification

    def get_bucket_notification(self: Any) -> Any:
        configuration = self.backend.get_bucket_notification_configuration(self.bucket_name)
        if configuration is None or configuration.event_bridge is None:
            return answer(self)
        if configuration.topic or configuration.queue or configuration.cloud_function:
            return answer(self)  # not what Ferry sets; moto's answer, as it is
        self.data["Action"] = "GetBucketNotificationConfiguration"
        return self.serialized(ActionResult({"EventBridgeConfiguration": {}}))

    S3Response.get_bucket_notification = get_bucket_notification
