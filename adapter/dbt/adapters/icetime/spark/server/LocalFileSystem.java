package icetime.server;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system (checksums included), setting a new file's permissions in the
 * JVM.
 *
 * <p>Without Hadoop's native library, which PySpark does not ship, Hadoop sets the permissions
 * of every file it creates by starting a {@code chmod} process: about ten per table commit (data
 * files, manifests, metadata and their checksum files), each a process spawn on the write path.
 * Java sets the same permissions itself. What is written, checksum files included, is the same.
 */
public final class LocalFileSystem extends org.apache.hadoop.fs.LocalFileSystem {
  public LocalFileSystem() {
    super(new Raw());
  }

  /** The raw file system underneath: Hadoop's, but for how it sets permissions. */
  public static final class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {
        super.setPermission(path, permission); // (Java has no sticky bit: Hadoop's way)
        return;
      }
      String rwx =
          permission.getUserAction().SYMBOL
              + permission.getGroupAction().SYMBOL
              + permission.getOtherAction().SYMBOL;
      try {
        Files.setPosixFilePermissions(
            pathToFile(path).toPath(), PosixFilePermissions.fromString(rwx));
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(path, permission);
      }
    }
  }
}
