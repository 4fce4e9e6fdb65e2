package icetime.server;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import javax.security.sasl.AuthenticationException;
import org.apache.hive.service.auth.PasswdAuthenticationProvider;

/**
 * The warm server's one check of a connection: its password is the secret in the file named by
 * ICETIME_SERVER_SECRET_FILE, a file only the user who started the server can read. The file is
 * read at every connection (a new server writes a new secret) and compared in constant time.
 */
public final class SecretAuthenticator implements PasswdAuthenticationProvider {
  @Override
  public void Authenticate(String user, String password) throws AuthenticationException {
    String path = System.getenv("ICETIME_SERVER_SECRET_FILE");
    if (path == null || password == null) {
      throw new AuthenticationException("icetime server: a connection must present the secret");
    }
    byte[] expected;
    try {
      expected = Files.readAllBytes(Paths.get(path));
    } catch (java.io.IOException e) {
      throw new AuthenticationException("icetime server: the secret file cannot be read");
    }
    byte[] given = password.getBytes(StandardCharsets.UTF_8);
    if (!MessageDigest.isEqual(new String(expected, StandardCharsets.UTF_8).trim()
        .getBytes(StandardCharsets.UTF_8), given)) {
      throw new AuthenticationException("icetime server: wrong secret");
    }
  }
}
