"""pyiceberg's ``FileIO`` on Ferry's file systems, for every step and copier that reads or
writes an Iceberg table's files (Plan, the copiers' manifest rewrites, Commit, Abort,
housekeeping)."""

from __future__ import annotations

from pyiceberg.io import InputFile, OutputFile
from pyiceberg.io.pyarrow import PyArrowFile, PyArrowFileIO, PyArrowLocalFileSystem

from ferry.storage import file_systems, fs


class FerryFileIO(PyArrowFileIO):
    """pyiceberg's pyarrow ``FileIO`` on Ferry's file systems (``ferry.storage.fs.resolve``): the
    S3 endpoint, regions and clients of this process, whatever the URI's spelling."""

    def new_input(self, location: str) -> PyArrowFile:
        filesystem, path = fs.resolve(location)
        return PyArrowFile(location=location, path=path, fs=filesystem)

    def new_output(self, location: str) -> PyArrowFile:
        filesystem, path = fs.resolve(location)
        if file_systems.is_local(filesystem):
            # pyiceberg's local file system creates a file's folder before writing it.
            filesystem = _LOCAL
        return PyArrowFile(location=location, path=path, fs=filesystem)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        # Through Ferry's deletes: on S3, pyarrow's delete_file writes an empty "folder"
        # object into the parent afterwards, a write a role that only deletes may not make.
        uri = location.location if isinstance(location, InputFile | OutputFile) else location
        fs.delete_tree(uri)


_LOCAL = PyArrowLocalFileSystem()
