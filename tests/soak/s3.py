"""The S3 calls the soak driver needs (list and delete the objects under a prefix),
through boto3 (scripts/soak installs it, pinned, into target/soak-venv)."""

import urllib.parse

import boto3
from botocore.config import Config


class Bucket:
    """A prefix of a bucket, from a `REELFARM_BLOB_URL` of the form
    `s3://BUCKET/PREFIX?endpoint=URL&region=R` (path-style addressing, as Garage wants)."""

    def __init__(self, blob_url, access_key, secret_key):
        url = urllib.parse.urlsplit(blob_url)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.bucket = url.netloc
        self.prefix = url.path.strip("/") + "/" if url.path.strip("/") else ""
        self.client = boto3.client(
            "s3", endpoint_url=query["endpoint"], region_name=query.get("region", "us-east-1"),
            aws_access_key_id=access_key, aws_secret_access_key=secret_key,
            config=Config(s3={"addressing_style": "path"}),
        )

    def objects(self):
        """(key, size) of every object under the prefix."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self.prefix)
        for page in pages:
            for item in page.get("Contents", []):
                yield item["Key"], item["Size"]

    def delete_all(self):
        """Deletes every object under the prefix; returns how many."""
        keys = [key for key, _ in self.objects()]
        for key in keys:
            self.client.delete_object(Bucket=self.bucket, Key=key)
        return len(keys)
