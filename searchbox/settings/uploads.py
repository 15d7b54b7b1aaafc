"""The app's disk: how large an upload may be and how long it is kept, how much one address and all
visitors may have uploaded, how long finished runs stay, and what the explorer may write."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from searchbox.settings.knob import at_least, knob


@dataclass(frozen=True)
class UploadSettings:
    """Uploads' sizes, quotas and lifetimes, finished runs' retention, and the explorer's disk."""

    TITLE: ClassVar[str] = "The app: uploads and retention"

    searchbox_max_upload_mb: int = knob(
        200, "the app refuses uploads larger than this before storing them", deploy=True
    )
    searchbox_upload_keep_seconds: int = knob(
        86400, "the app deletes uploads and its copies of served files this many seconds after they were made "
        "(checked every hour, or as often as this when shorter); all of them when it stops"
    )
    searchbox_upload_unclaimed_seconds: int = knob(
        600, "the app deletes an upload that no run, explorer load or page of the address that sent it took within "
        "this many seconds; one a page took goes when that page is closed or reloaded"
    )
    searchbox_uploads_per_address: int = knob(
        5, "files one client address may have uploaded and kept at once; more are refused until some are deleted "
        "(0 = no limit)"
    )
    searchbox_uploads_per_address_mb: int = knob(
        600, "megabytes of uploads one client address may have kept at once, counted as each upload's request "
        "size (0 = no limit)"
    )
    searchbox_uploads_total_mb: int = knob(
        4096, "megabytes of uploads all visitors of the app together may have kept at once (0 = no limit)"
    )
    searchbox_upload_stall_seconds: int = knob(
        30, "the app cuts off an upload or a call whose body brings less than 16 KB a second (or the rest of it) "
        "over this many seconds, and deletes what it stored (0 = never)"
    )
    searchbox_preview_indexers: int = knob(
        2, "uploads the app embeds for search at once while their visitors type (one per client address, the newest; "
        "each stops when its run starts or its upload would be deleted unclaimed); 0 = a room is embedded by its run",
        deploy=True
    )
    searchbox_keep_days: int = knob(
        14, "the app deletes finished runs older than this many days (0 = keeps them)", deploy=True
    )
    searchbox_jobs_max_mb: int = knob(
        20480, "the app deletes its oldest finished runs while all its runs take more disk than this (0 = no cap)",
        deploy=True
    )
    searchbox_explore_disk_mb: int = knob(
        16, "disk space a dataroom loaded in the app's explorer may take beyond the dataroom (JOB_DISK_MB when that is "
        "less): the explorer's write and edit tools, which a visitor calls with no model between, refuse to pass it"
    )


def check(settings: UploadSettings) -> None:
    """SettingsError for a value of this section's knobs that cannot be used."""
    at_least(settings, 1, ("searchbox_explore_disk_mb", "searchbox_max_upload_mb", "searchbox_upload_keep_seconds",
                           "searchbox_upload_unclaimed_seconds"))
    at_least(settings, 0, ("searchbox_preview_indexers", "searchbox_uploads_per_address", "searchbox_uploads_per_address_mb",
                           "searchbox_uploads_total_mb", "searchbox_upload_stall_seconds"))
